// kafkajs 2.2 transactions against a broker: its own implementation of the transactional protocol
// (InitProducerId, AddPartitionsToTxn v1, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), not
// librdkafka's. A committed transaction over 4 partitions, an aborted one, one with offsets of a
// consumer group (sendOffsets), and a zombie: a second producer with the same transactional id
// fences the first, whose open transaction is aborted. read_committed and read_uncommitted
// consumers then read everything. Usage: node kafkajs_transactions.mjs <kafkajs dir> <host:port>
// Prints one JSON object; tests/compat/test_node_clients.py checks it.
import { createRequire } from 'node:module'
import path from 'node:path'

const [packageDir, bootstrap] = process.argv.slice(2)
const require = createRequire(path.join(path.resolve(packageDir), 'package.json'))
const { Kafka, logLevel } = require(path.resolve(packageDir))
const kafka = new Kafka({ clientId: 'minikafka-txn-test', brokers: [bootstrap], logLevel: logLevel.NOTHING })
const topic = 'node-kjs-txn'
const partitions = 4
const group = 'node-kjs-txn-group'
const out = {}

const admin = kafka.admin()
await admin.connect()
await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true })

const messages = tag => [...Array(partitions).keys()].map(p => ({ partition: p, value: `${tag}-${p}` }))
const transactional = () =>
  kafka.producer({ transactionalId: 'node-kjs-txn-id', maxInFlightRequests: 1, idempotent: true })

const producer = transactional()
await producer.connect()
let txn = await producer.transaction()
await txn.send({ topic, messages: messages('committed') })
await txn.commit()
txn = await producer.transaction()
await txn.send({ topic, messages: messages('aborted') })
await txn.abort()
txn = await producer.transaction()
await txn.send({ topic, messages: messages('with-offsets') })
await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '7' }] }] })
await txn.commit()

// the zombie: its transaction is open when a new producer of the same id starts
const zombie = await producer.transaction()
await zombie.send({ topic, messages: messages('zombie') })
const successor = transactional()
await successor.connect()
txn = await successor.transaction()
try {
  await zombie.commit()
  out.zombieCommit = 'committed'
} catch (e) {
  out.zombieCommit = e.type || e.name
}
await txn.send({ topic, messages: messages('successor') })
await txn.commit()
// the last committed records of each partition: a reader that has them has read everything
txn = await successor.transaction()
await txn.send({ topic, messages: messages('end') })
await txn.commit()
await producer.disconnect()
await successor.disconnect()

async function readAll (readUncommitted) {
  const consumer = kafka.consumer({
    groupId: `node-kjs-txn-reader-${readUncommitted}`,
    readUncommitted,
    sessionTimeout: 10000,
    heartbeatInterval: 500,
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const seen = []
  let ends = 0
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        const value = message.value.toString()
        seen.push(value)
        if (value.startsWith('end-') && ++ends === partitions) resolve()
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  return seen.sort()
}

out.readCommitted = await readAll(false)
out.readUncommitted = await readAll(true)
const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] })
out.groupOffsets = committed[0].partitions.map(p => [p.partition, Number(p.offset)]).sort()
await admin.disconnect()
console.log(JSON.stringify(out))
