// @platformatic/kafka against a broker, as its README uses it: admin, produce with every codec, a
// consumer group, offsets. Usage: node platformatic.mjs <package dir> <host:port> <codec,...>
// Prints one JSON object with what each step saw; tests/compat/test_node_clients.py checks it.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const [packageDir, bootstrap, codecList] = process.argv.slice(2)
const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'))
const kafka = await import(pathToFileURL(path.resolve(packageDir, manifest.exports)).href)
const { Admin, Producer, Consumer, stringSerializers, stringDeserializers } = kafka
const codecs = codecList.split(',').filter(Boolean)
const topic = 'node-pk'
const out = {}
const base = { clientId: 'minikafka-test', bootstrapBrokers: [bootstrap], retries: 3 }

const admin = new Admin(base)
const created = await admin.createTopics({ topics: [topic, 'node-pk-doomed'], partitions: 2, replicas: 1 })
out.created = created.map(t => [t.name, t.partitions])
await admin.createPartitions({ topics: [{ name: topic, count: 3 }] })
const meta = await admin.metadata({ topics: [topic] })
out.partitions = meta.topics.get(topic).partitionsCount
await admin.incrementalAlterConfigs({
  resources: [{ resourceType: 2, resourceName: topic, configs: [{ name: 'retention.ms', configOperation: 0, value: '3600000' }] }]
})
const configs = await admin.describeConfigs({ resources: [{ resourceType: 2, resourceName: topic, configurationKeys: ['retention.ms'] }] })
out.retention = configs[0].configs.find(c => c.name === 'retention.ms').value

const producer = new Producer({ ...base, serializers: stringSerializers })
let sent = 0
for (const codec of ['none', ...codecs]) {
  for (let p = 0; p < 3; p++) {
    await producer.send({
      messages: [{ topic, partition: p, key: `k-${codec}-${p}`, value: `v-${codec}-${p}`, headers: { codec } }],
      compression: codec,
      acks: -1
    })
    sent++
  }
}
await producer.close()
out.sent = sent

const consumer = new Consumer({ ...base, groupId: 'node-pk-group', deserializers: stringDeserializers })
const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, sessionTimeout: 10000, heartbeatInterval: 500 })
const seen = []
for await (const message of stream) {
  seen.push(`${message.partition}:${message.key}=${message.value}:${message.headers.get('codec')}`)
  await message.commit()
  if (seen.length === sent) break
}
await stream.close()
await consumer.close(true)
out.consumed = seen.sort()

const groups = await admin.listConsumerGroupOffsets({ groups: ['node-pk-group'] })
out.committed = groups[0].topics.flatMap(t => t.partitions.map(p => [t.name, p.partitionIndex, Number(p.committedOffset)])).sort()
const listed = await admin.listOffsets({ topics: [{ name: topic, partitions: [0, 1, 2].map(p => ({ partitionIndex: p, timestamp: -1n })) }] })
out.latest = listed[0].partitions.map(p => [p.partitionIndex, Number(p.offset)]).sort()
const deleted = await admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 1n }] }] })
out.lowWatermark = Number(deleted[0].partitions[0].lowWatermark)
const dirs = await admin.describeLogDirs({ topics: [{ name: topic, partitions: [0] }] })
out.logDirSizes = dirs[0].results.flatMap(r => r.topics.flatMap(t => t.partitions.map(p => Number(p.partitionSize))))
await admin.deleteConsumerGroupOffsets({ groupId: 'node-pk-group', topics: [{ name: topic, partitionIndexes: [2] }] })
const after = await admin.listConsumerGroupOffsets({ groups: ['node-pk-group'] })
out.committedAfterDelete = after[0].topics.flatMap(t => t.partitions.map(p => [p.partitionIndex, Number(p.committedOffset)])).sort()
const described = await admin.describeGroups({ groups: ['node-pk-group'] })
out.groupState = described.get('node-pk-group').state
await admin.deleteGroups({ groups: ['node-pk-group'] })
await admin.deleteTopics({ topics: ['node-pk-doomed'] })
out.topics = (await admin.listTopics()).filter(t => t.startsWith('node-pk')).sort()
await admin.close()
console.log(JSON.stringify(out))
