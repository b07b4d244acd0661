import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;

/** The producer: acks, idempotence, codecs, headers, large records, partitioning, callbacks, flush. */
final class ProducerChecks {
    private ProducerChecks() {}

    static void register(JavaChecks.Registry r, Ctx ctx) {
        Conn conn = ctx.conn;
        for (String acks : List.of("0", "1", "all")) {
            r.add("producer.acks_" + acks, () -> acks(conn, acks));
        }
        r.add("producer.idempotent", () -> idempotent(conn));
        for (String codec : List.of("gzip", "snappy", "lz4", "zstd")) {
            r.add("producer.codec_" + codec, () -> codec(ctx, codec));
        }
        r.add("producer.headers", () -> headers(conn));
        r.add("producer.null_key_and_value", () -> nulls(conn));
        r.add("producer.large_record_1mb", () -> largeRecord(conn));
        r.add("producer.callback_gets_broker_error", () -> brokerError(conn));
        r.add("producer.key_partitioning", () -> keyPartitioning(conn));
        r.add("producer.callbacks", () -> callbacks(conn));
        r.add("producer.flush", () -> flush(conn));
        r.add("producer.timestamps", () -> timestamps(conn));
        r.add("producer.min_insync_replicas", () -> minInsync(conn));
        r.add("producer.auto_create_topic", () -> autoCreate(ctx));
    }

    private static List<String> numbered(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + "-" + i);
        }
        return out;
    }

    private static List<String> sorted(List<String> values) {
        List<String> out = new ArrayList<>(values);
        Collections.sort(out);
        return out;
    }

    static String acks(Conn conn, String acks) throws Exception {
        String topic = conn.createTopic(Conn.unique("acks-" + acks), 3);
        List<String> sent = numbered("acks", 300);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<String, String> producer = conn.producer("acks", acks,
                "enable.idempotence", "false")) {
            for (String v : sent) {
                futures.add(producer.send(new ProducerRecord<>(topic, v, v)));
            }
            producer.flush();
        }
        int withOffset = 0;
        for (Future<RecordMetadata> f : futures) {
            withOffset += f.get().hasOffset() ? 1 : 0;
        }
        List<String> read = Conn.values(conn.readToEnd(topic, "read_uncommitted", 20000));
        JavaChecks.expect(sorted(read).equals(sorted(sent)), "sent %d, read back %d (first: %s)",
                sent.size(), read.size(), read.stream().limit(3).collect(Collectors.toList()));
        if (acks.equals("0")) {
            JavaChecks.expect(withOffset == 0, "acks=0 metadata carries offsets for %d records", withOffset);
        } else {
            JavaChecks.expect(withOffset == sent.size(), "only %d of %d acks carry offsets",
                    withOffset, sent.size());
        }
        return "acks=" + acks + ": " + read.size() + " records read back";
    }

    static String idempotent(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("idem"), 1);
        List<String> sent = numbered("idem", 3000);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<String, String> producer = conn.producer("enable.idempotence", "true",
                "acks", "all", "max.in.flight.requests.per.connection", "5", "batch.size", "4096")) {
            for (String v : sent) {
                futures.add(producer.send(new ProducerRecord<>(topic, null, v)));
            }
            producer.flush();
        }
        for (int i = 0; i < futures.size(); i++) {
            long offset = futures.get(i).get().offset();
            JavaChecks.expect(offset == i, "record %d acknowledged at offset %d", i, offset);
        }
        List<String> read = Conn.values(conn.readToEnd(topic, "read_uncommitted", 20000));
        JavaChecks.expect(read.equals(sent), "read back %d records, not the %d sent in order",
                read.size(), sent.size());
        return sent.size() + " records at offsets 0.." + (sent.size() - 1);
    }

    static String codec(Ctx ctx, String codec) throws Exception {
        Conn conn = ctx.conn;
        String topic = conn.createTopic(Conn.unique("codec-" + codec), 1);
        List<String> sent = new ArrayList<>();
        StringBuilder filler = new StringBuilder();
        for (int i = 0; i < 20; i++) {
            filler.append("compressible text ");
        }
        for (int i = 0; i < 2000; i++) {
            sent.add(i + " " + filler);
        }
        long raw = sent.stream().mapToLong(String::length).sum();
        try (KafkaProducer<String, String> producer = conn.producer("compression.type", codec,
                "linger.ms", "20", "batch.size", "65536")) {
            for (String v : sent) {
                producer.send(new ProducerRecord<>(topic, null, v));
            }
            producer.flush();
        }
        List<String> read = Conn.values(conn.readToEnd(topic, "read_uncommitted", 20000));
        JavaChecks.expect(read.equals(sent), "%s: read back %d records, not the %d sent", codec,
                read.size(), sent.size());
        long stored = partitionSize(ctx, new TopicPartition(topic, 0));
        JavaChecks.expect(stored > 0 && stored < raw / 2,
                "%s: the log holds %d bytes for %d bytes of values (not stored compressed?)", codec, stored, raw);
        return codec + ": " + sent.size() + " records, " + raw + " value bytes stored in " + stored;
    }

    /** The partition's size on disk as DescribeLogDirs reports it (-1 if not listed). */
    static long partitionSize(Ctx ctx, TopicPartition tp) throws Exception {
        Map<Integer, Map<String, LogDirDescription>> dirs =
                ctx.admin().describeLogDirs(List.of(0)).allDescriptions().get();
        for (Map<String, LogDirDescription> byPath : dirs.values()) {
            for (LogDirDescription dir : byPath.values()) {
                ReplicaInfo info = dir.replicaInfos().get(tp);
                if (info != null) {
                    return info.size();
                }
            }
        }
        return -1;
    }

    static String headers(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("headers"), 1);
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        List<Header> sent = List.of(
                new RecordHeader("trace", "abc".getBytes(StandardCharsets.UTF_8)),
                new RecordHeader("trace", "second value, same key".getBytes(StandardCharsets.UTF_8)),
                new RecordHeader("empty", new byte[0]),
                new RecordHeader("null-value", (byte[]) null),
                new RecordHeader("\u00fcnicode-\u2603", binary));
        try (KafkaProducer<String, String> producer = conn.producer()) {
            producer.send(new ProducerRecord<>(topic, null, "k", "with headers", sent)).get();
            producer.send(new ProducerRecord<>(topic, "k", "without headers")).get();
        }
        List<ConsumerRecord<String, String>> read = conn.readToEnd(topic, "read_uncommitted", 20000);
        JavaChecks.expect(read.size() == 2, "read %d records", read.size());
        List<Header> got = Arrays.asList(read.get(0).headers().toArray());
        JavaChecks.expect(got.size() == sent.size(), "sent %d headers, read %d", sent.size(), got.size());
        for (int i = 0; i < sent.size(); i++) {
            Header s = sent.get(i);
            Header g = got.get(i);
            JavaChecks.expect(s.key().equals(g.key()) && Arrays.equals(s.value(), g.value()),
                    "header %d: sent %s=%s, read %s=%s", i, s.key(), Arrays.toString(s.value()), g.key(),
                    Arrays.toString(g.value()));
        }
        JavaChecks.expect(read.get(1).headers().toArray().length == 0, "the second record has headers");
        return sent.size() + " headers (repeated key, empty, null, binary, non-ASCII key) read back";
    }

    static String nulls(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("nulls"), 1);
        try (KafkaProducer<String, String> producer = conn.producer()) {
            producer.send(new ProducerRecord<>(topic, null, "no key")).get();
            producer.send(new ProducerRecord<>(topic, "tombstone", null)).get();
            producer.send(new ProducerRecord<>(topic, "", "")).get();
        }
        List<ConsumerRecord<String, String>> read = conn.readToEnd(topic, "read_uncommitted", 20000);
        JavaChecks.expect(read.size() == 3, "read %d records", read.size());
        JavaChecks.expect(read.get(0).key() == null && "no key".equals(read.get(0).value()),
                "record 0: key=%s value=%s", read.get(0).key(), read.get(0).value());
        JavaChecks.expect("tombstone".equals(read.get(1).key()) && read.get(1).value() == null,
                "record 1: key=%s value=%s", read.get(1).key(), read.get(1).value());
        JavaChecks.expect("".equals(read.get(2).key()) && "".equals(read.get(2).value()),
                "record 2: key=%s value=%s", read.get(2).key(), read.get(2).value());
        return "null key, null value and empty strings read back as sent";
    }

    static String largeRecord(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("large"), 1, "max.message.bytes", "3000000");
        StringBuilder big = new StringBuilder(1 << 20);
        for (int i = 0; big.length() < (1 << 20); i++) {
            big.append((char) ('a' + (i * 7919) % 26));
        }
        String value = big.toString();
        RecordMetadata md;
        try (KafkaProducer<String, String> producer = conn.producer("max.request.size", "3000000",
                "compression.type", "none")) {
            md = producer.send(new ProducerRecord<>(topic, "big", value)).get();
        }
        List<ConsumerRecord<String, String>> read = conn.readToEnd(topic, "read_uncommitted", 30000);
        JavaChecks.expect(read.size() == 1, "read %d records", read.size());
        JavaChecks.expect(value.equals(read.get(0).value()), "the value read back differs (length %d)",
                read.get(0).value() == null ? -1 : read.get(0).value().length());
        return "a " + value.length() + "-byte value at offset " + md.offset() + " read back intact";
    }

    static String brokerError(Conn conn) throws Exception {
        // 200 kB fits the producer's max.request.size but not the topic's max.message.bytes:
        // only the broker can refuse it (MESSAGE_TOO_LARGE).
        String topic = conn.createTopic(Conn.unique("too-large"), 1, "max.message.bytes", "100000");
        String value = "x".repeat(200_000);
        Exception[] seen = new Exception[1];
        Future<RecordMetadata> future;
        try (KafkaProducer<String, String> producer = conn.producer("compression.type", "none")) {
            future = producer.send(new ProducerRecord<>(topic, value), (md, e) -> seen[0] = e);
            producer.flush();
        }
        try {
            future.get();
            throw new JavaChecks.Failed("a 200 kB record was accepted by a topic with max.message.bytes=100000");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof RecordTooLargeException,
                    "expected RecordTooLargeException, got %s", e.getCause());
        }
        JavaChecks.expect(seen[0] instanceof RecordTooLargeException, "the callback got %s", seen[0]);
        return "callback and future got " + seen[0].getClass().getSimpleName();
    }

    static String keyPartitioning(Conn conn) throws Exception {
        int partitions = 6;
        String topic = conn.createTopic(Conn.unique("keys"), partitions);
        Map<String, List<Future<RecordMetadata>>> byKey = new TreeMap<>();
        try (KafkaProducer<String, String> producer = conn.producer()) {
            for (int round = 0; round < 4; round++) {
                for (int k = 0; k < 30; k++) {
                    String key = "user-" + k;
                    byKey.computeIfAbsent(key, x -> new ArrayList<>())
                            .add(producer.send(new ProducerRecord<>(topic, key, key + "/" + round)));
                }
            }
            producer.flush();
        }
        Map<String, Integer> partitionOf = new HashMap<>();
        for (Map.Entry<String, List<Future<RecordMetadata>>> e : byKey.entrySet()) {
            int expected = Utils.toPositive(Utils.murmur2(e.getKey().getBytes(StandardCharsets.UTF_8)))
                    % partitions;
            for (Future<RecordMetadata> f : e.getValue()) {
                int p = f.get().partition();
                JavaChecks.expect(p == expected, "key %s went to partition %d, murmur2 says %d",
                        e.getKey(), p, expected);
            }
            partitionOf.put(e.getKey(), expected);
        }
        List<ConsumerRecord<String, String>> read = conn.readToEnd(topic, "read_uncommitted", 20000);
        JavaChecks.expect(read.size() == 120, "read %d of 120 records", read.size());
        for (ConsumerRecord<String, String> rec : read) {
            JavaChecks.expect(rec.partition() == partitionOf.get(rec.key()), "key %s read from partition %d",
                    rec.key(), rec.partition());
        }
        long used = partitionOf.values().stream().distinct().count();
        return "30 keys x 4 records, each key in its murmur2 partition (" + used + " of 6 used)";
    }

    static String callbacks(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("callbacks"), 3);
        int n = 600;
        List<RecordMetadata> order = Collections.synchronizedList(new ArrayList<>());
        List<Exception> errors = Collections.synchronizedList(new ArrayList<>());
        Map<Integer, List<Integer>> sentByPartition = new HashMap<>();
        Map<Integer, List<Integer>> ackedByPartition = new HashMap<>();
        try (KafkaProducer<String, String> producer = conn.producer("enable.idempotence", "true")) {
            for (int i = 0; i < n; i++) {
                int partition = i % 3;
                int seq = i;
                sentByPartition.computeIfAbsent(partition, x -> new ArrayList<>()).add(seq);
                producer.send(new ProducerRecord<>(topic, partition, null, "v" + i), (md, e) -> {
                    if (e != null) {
                        errors.add(e);
                    } else {
                        order.add(md);
                        synchronized (ackedByPartition) {
                            ackedByPartition.computeIfAbsent(md.partition(), x -> new ArrayList<>()).add(seq);
                        }
                    }
                });
            }
            producer.flush();
        }
        JavaChecks.expect(errors.isEmpty(), "callbacks got errors: %s", errors);
        JavaChecks.expect(order.size() == n, "%d of %d callbacks ran", order.size(), n);
        JavaChecks.expect(sentByPartition.equals(ackedByPartition),
                "callbacks of one partition did not run in send order");
        Map<Integer, Long> last = new HashMap<>();
        for (RecordMetadata md : order) {
            long prev = last.getOrDefault(md.partition(), -1L);
            JavaChecks.expect(md.offset() == prev + 1, "partition %d: offset %d after %d", md.partition(),
                    md.offset(), prev);
            last.put(md.partition(), md.offset());
        }
        return n + " callbacks, in send order per partition, offsets consecutive";
    }

    static String flush(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("flush"), 1);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<String, String> producer = conn.producer("linger.ms", "60000",
                "batch.size", "1000000", "delivery.timeout.ms", "120000")) {
            for (int i = 0; i < 500; i++) {
                futures.add(producer.send(new ProducerRecord<>(topic, "v" + i)));
            }
            long pending = futures.stream().filter(f -> !f.isDone()).count();
            long start = System.nanoTime();
            producer.flush();
            long ms = (System.nanoTime() - start) / 1_000_000;
            long undone = futures.stream().filter(f -> !f.isDone()).count();
            JavaChecks.expect(undone == 0, "%d sends not complete after flush()", undone);
            JavaChecks.expect(ms < 20000, "flush() took %d ms despite linger.ms", ms);
            for (Future<RecordMetadata> f : futures) {
                f.get();
            }
            return pending + " sends pending under linger.ms=60000 were completed by flush() in " + ms + " ms";
        }
    }

    static String minInsync(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("min-isr"), 1, "min.insync.replicas", "2");
        try (KafkaProducer<String, String> producer = conn.producer("acks", "all", "enable.idempotence", "false",
                "retries", "0")) {
            producer.send(new ProducerRecord<>(topic, "needs two replicas")).get();
            throw new JavaChecks.Failed("an acks=all write succeeded with 1 replica and min.insync.replicas=2");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof org.apache.kafka.common.errors.NotEnoughReplicasException,
                    "acks=all: %s", e.getCause());
        }
        try (KafkaProducer<String, String> producer = conn.producer("acks", "1", "enable.idempotence", "false")) {
            producer.send(new ProducerRecord<>(topic, "one replica is enough")).get();
        }
        return "acks=all: NotEnoughReplicasException; acks=1 written";
    }

    static String autoCreate(Ctx ctx) throws Exception {
        String topic = Conn.unique("auto-created");
        RecordMetadata md;
        try (KafkaProducer<String, String> producer = ctx.conn.producer()) {
            md = producer.send(new ProducerRecord<>(topic, "first")).get();
        }
        int partitions = ctx.admin().describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions()
                .size();
        JavaChecks.expect(partitions == 1, "the auto-created topic has %d partitions (num.partitions=1)", partitions);
        return "a send to a missing topic created it (1 partition) and wrote offset " + md.offset();
    }

    static String timestamps(Conn conn) throws Exception {
        String create = conn.createTopic(Conn.unique("ts-create"), 1);
        String append = conn.createTopic(Conn.unique("ts-append"), 1, "message.timestamp.type", "LogAppendTime");
        long old = 1_600_000_000_000L;
        long before = System.currentTimeMillis();
        RecordMetadata mdCreate;
        RecordMetadata mdAppend;
        try (KafkaProducer<String, String> producer = conn.producer()) {
            mdCreate = producer.send(new ProducerRecord<>(create, 0, old, "k", "v")).get();
            mdAppend = producer.send(new ProducerRecord<>(append, 0, old, "k", "v")).get();
        }
        long after = System.currentTimeMillis();
        JavaChecks.expect(mdCreate.timestamp() == old, "CreateTime: metadata timestamp %d", mdCreate.timestamp());
        JavaChecks.expect(mdAppend.timestamp() >= before - 5000 && mdAppend.timestamp() <= after + 5000,
                "LogAppendTime: metadata timestamp %d, not the broker's clock (%d..%d)", mdAppend.timestamp(),
                before, after);
        ConsumerRecord<String, String> rc = conn.readToEnd(create, "read_uncommitted", 20000).get(0);
        ConsumerRecord<String, String> ra = conn.readToEnd(append, "read_uncommitted", 20000).get(0);
        JavaChecks.expect(rc.timestamp() == old && rc.timestampType() == TimestampType.CREATE_TIME,
                "CreateTime topic read back %s %d", rc.timestampType(), rc.timestamp());
        JavaChecks.expect(ra.timestamp() == mdAppend.timestamp() && ra.timestampType() == TimestampType.LOG_APPEND_TIME,
                "LogAppendTime topic read back %s %d (acknowledged %d)", ra.timestampType(), ra.timestamp(),
                mdAppend.timestamp());
        return "CreateTime kept, LogAppendTime set by the broker";
    }
}
