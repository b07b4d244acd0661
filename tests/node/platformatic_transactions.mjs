// @platformatic/kafka 2.x transactions against a broker: a third implementation of the transaction
// protocol (neither librdkafka's nor kafkajs's), on the newest versions of transaction version 1
// (InitProducerId v5, Produce v11, EndTxn v4, TxnOffsetCommit v4), and AddPartitionsToTxn v5, the
// brokers' version, which Kafka takes from a producer too when CLUSTER_ACTION is not denied.
// A committed transaction over 4 partitions, an aborted one, and a consume-transform-produce one
// that commits the consumer's offsets inside the transaction; read_committed and read_uncommitted
// consumers then read everything. No zombie here: a new producer of this client names producer id
// 0 and epoch 0 as its current one in InitProducerId (not -1, -1), so once fencing the old
// producer has moved the id's epoch past 0, Kafka, and this broker, answer it PRODUCER_FENCED
// (KIP-360's check).
// Usage: node platformatic_transactions.mjs <package dir> <host:port>
// Prints one JSON object; tests/compat/test_node_clients.py checks it.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const [packageDir, bootstrap] = process.argv.slice(2)
const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'))
const kafka = await import(pathToFileURL(path.resolve(packageDir, manifest.exports)).href)
const { Admin, Producer, Consumer, stringSerializers, stringDeserializers } = kafka
const topic = 'node-pk-txn'
const source = 'node-pk-txn-source'
const partitions = 4
const group = 'node-pk-txn-group'
const base = { clientId: 'minikafka-txn-test', bootstrapBrokers: [bootstrap], retries: 3 }
const out = {}

const admin = new Admin(base)
await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
await admin.createTopics({ topics: [source], partitions: 1, replicas: 1 })

const messages = tag => [...Array(partitions).keys()].map(p => ({ topic, partition: p, value: `${tag}-${p}` }))
const transactional = () =>
  new Producer({ ...base, idempotent: true, transactionalId: 'node-pk-txn-id', serializers: stringSerializers })

const plain = new Producer({ ...base, serializers: stringSerializers })
await plain.send({ messages: [0, 1, 2].map(i => ({ topic: source, partition: 0, value: `in-${i}` })), acks: -1 })
await plain.close()

const producer = transactional()
let txn = await producer.beginTransaction()
await txn.send({ messages: messages('committed') })
await txn.commit()
txn = await producer.beginTransaction()
await txn.send({ messages: messages('aborted') })
await txn.abort()

// consume-transform-produce: the consumer's offsets commit with the transaction
const consumer = new Consumer({ ...base, groupId: group, deserializers: stringDeserializers })
const stream = await consumer.consume({ topics: [source], mode: 'earliest', autocommit: false, sessionTimeout: 10000, heartbeatInterval: 500 })
txn = await producer.beginTransaction()
await txn.addConsumer(consumer)
let read = 0
for await (const message of stream) {
  await txn.send({ messages: [{ topic, partition: read % partitions, value: `out-${message.value}` }] })
  await txn.addOffset(message)
  if (++read === 3) break
}
await txn.commit()
await stream.close()
await consumer.close(true)

// the last committed records of each partition: a reader that has them has read everything
txn = await producer.beginTransaction()
await txn.send({ messages: messages('end') })
await txn.commit()
await producer.close()

async function readAll (isolationLevel) {
  const reader = new Consumer({ ...base, groupId: `node-pk-txn-reader-${isolationLevel}`, deserializers: stringDeserializers })
  const values = await reader.consume({ topics: [topic], mode: 'earliest', isolationLevel, sessionTimeout: 10000, heartbeatInterval: 500 })
  const seen = []
  let ends = 0
  for await (const message of values) {
    seen.push(message.value)
    if (message.value.startsWith('end-') && ++ends === partitions) break
  }
  await values.close()
  await reader.close(true)
  return seen.sort()
}

out.readCommitted = await readAll(1)
out.readUncommitted = await readAll(0)
const offsets = await admin.listConsumerGroupOffsets({ groups: [group] })
out.groupOffsets = offsets[0].topics.flatMap(t => t.partitions.map(p => [t.name, p.partitionIndex, Number(p.committedOffset)]))
await admin.close()
console.log(JSON.stringify(out))
