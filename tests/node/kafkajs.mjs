// kafkajs 2.2 against a broker: admin, produce (none and gzip: its built-in codecs), a consumer
// group with commits, offsets admin. Usage: node kafkajs.mjs <kafkajs dir> <host:port>
// Prints one JSON object; tests/compat/test_node_clients.py checks it.
import { createRequire } from 'node:module'
import path from 'node:path'

const [packageDir, bootstrap] = process.argv.slice(2)
const require = createRequire(path.join(path.resolve(packageDir), 'package.json'))
const { Kafka, CompressionTypes, logLevel } = require(path.resolve(packageDir))
const kafka = new Kafka({ clientId: 'minikafka-test', brokers: [bootstrap], logLevel: logLevel.NOTHING })
const topic = 'node-kjs'
const out = {}

const admin = kafka.admin()
await admin.connect()
out.created = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }, { topic: 'node-kjs-doomed' }], waitForLeaders: true })
await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] })
const configs = await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['cleanup.policy'] }] })
out.cleanup = configs.resources[0].configEntries[0].configValue

const producer = kafka.producer({ idempotent: true })
await producer.connect()
let sent = 0
for (const [name, codec] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]]) {
  for (let p = 0; p < 3; p++) {
    await producer.send({ topic, compression: codec, messages: [{ partition: p, key: `k-${name}-${p}`, value: `v-${name}-${p}` }] })
    sent++
  }
}
await producer.disconnect()
out.sent = sent

const consumer = kafka.consumer({ groupId: 'node-kjs-group', sessionTimeout: 10000, heartbeatInterval: 500 })
await consumer.connect()
await consumer.subscribe({ topics: [topic], fromBeginning: true })
const seen = []
await new Promise((resolve, reject) => {
  consumer.run({
    eachMessage: async ({ partition, message }) => {
      seen.push(`${partition}:${message.key}=${message.value}`)
      if (seen.length === sent) resolve()
    }
  }).catch(reject)
})
await consumer.disconnect()
out.consumed = seen.sort()

const committed = await admin.fetchOffsets({ groupId: 'node-kjs-group', topics: [topic] })
out.committed = committed[0].partitions.map(p => [p.partition, Number(p.offset)]).sort()
const offsets = await admin.fetchTopicOffsets(topic)
out.latest = offsets.map(p => [p.partition, Number(p.high)]).sort()
await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '1' }] })
out.low = Number((await admin.fetchTopicOffsets(topic)).find(p => p.partition === 0).low)
const groups = await admin.describeGroups(['node-kjs-group'])
out.groupState = groups.groups[0].state
await admin.deleteGroups(['node-kjs-group'])
await admin.deleteTopics({ topics: ['node-kjs-doomed'] })
out.topics = (await admin.listTopics()).filter(t => t.startsWith('node-kjs')).sort()
await admin.disconnect()
console.log(JSON.stringify(out))
