// @confluentinc/kafka-javascript (librdkafka inside) against a broker: admin, produce with each codec,
// consumer groups of both protocols (classic and KIP-848 `group.protocol=consumer`) with commits,
// offsets admin. Usage: node confluent.mjs <package dir> <host:port> <codecs,...>
// Prints one JSON object; tests/compat/test_node_clients.py checks it.
import { createRequire } from 'node:module'
import path from 'node:path'

const [packageDir, bootstrap, codecList] = process.argv.slice(2)
const require = createRequire(path.join(path.resolve(packageDir), 'package.json'))
const lib = require(path.resolve(packageDir))
const { Kafka, logLevel } = lib.KafkaJS
const kafka = new Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: logLevel.NOTHING } })
const topic = 'node-cfk'
const codecs = codecList.split(',')
const out = {}

const admin = kafka.admin()
await admin.connect()
out.created = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }, { topic: 'node-cfk-doomed', numPartitions: 2 }] })
const raw = lib.AdminClient.create({ 'bootstrap.servers': bootstrap })
await new Promise((resolve, reject) => raw.createPartitions(topic, 3, 10000, err => (err ? reject(err) : resolve())))
raw.disconnect()
const [described] = await admin.fetchTopicMetadata({ topics: [topic] })
out.partitions = described.partitions.length

let sent = 0
for (const codec of ['none', ...codecs]) {
  const producer = kafka.producer({ 'compression.codec': codec, kafkaJS: { idempotent: true } })
  await producer.connect()
  for (let p = 0; p < 3; p++) {
    await producer.send({ topic, messages: [{ partition: p, key: `k-${codec}-${p}`, value: `v-${codec}-${p}` }] })
    sent++
  }
  await producer.disconnect()
}
out.sent = sent

async function consumeAll (groupId, extra) {
  const consumer = kafka.consumer({ ...extra, kafkaJS: { groupId, fromBeginning: true, autoCommit: false } })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  const seen = []
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.push(`${partition}:${message.key}=${message.value}`)
        await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
        if (seen.length === sent) resolve()
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
  return { consumed: seen.sort(), committed: committed[0].partitions.map(p => [p.partition, Number(p.offset)]).sort() }
}
out.classic = await consumeAll('node-cfk-classic', {})
out.consumer = await consumeAll('node-cfk-848', { 'group.protocol': 'consumer' })

const offsets = await admin.fetchTopicOffsets(topic)
out.latest = offsets.map(p => [p.partition, Number(p.high)]).sort()
await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '1' }] })
out.low = Number((await admin.fetchTopicOffsets(topic)).find(p => p.partition === 0).low)
const groups = await admin.describeGroups(['node-cfk-classic'])
out.groupState = groups.groups[0].state
out.groups = (await admin.listGroups()).groups.map(g => g.groupId).filter(g => g.startsWith('node-cfk')).sort()
await admin.deleteGroups(['node-cfk-classic'])
await admin.deleteTopics({ topics: ['node-cfk-doomed'] })
out.topics = (await admin.listTopics()).filter(t => t.startsWith('node-cfk')).sort()
await admin.disconnect()
console.log(JSON.stringify(out))
