import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;

/** Transactions: commit, abort, isolation levels, consume-transform-produce, zombie fencing. */
final class TransactionChecks {
    private TransactionChecks() {}

    static void register(JavaChecks.Registry r, Ctx ctx) {
        Conn conn = ctx.conn;
        r.add("transactions.commit", () -> commit(conn));
        r.add("transactions.abort", () -> abort(conn));
        r.add("transactions.isolation_levels", () -> isolation(conn));
        r.add("transactions.send_offsets_to_transaction", () -> consumeTransformProduce(conn));
        r.add("transactions.zombie_fencing", () -> fencing(conn));
    }

    static KafkaProducer<String, String> transactional(Conn conn, String id) {
        return conn.producer("transactional.id", id, "transaction.timeout.ms", "30000");
    }

    static String commit(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("txn-commit"), 2);
        try (KafkaProducer<String, String> producer = transactional(conn, Conn.unique("tx-commit"))) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "first-" + i));
            }
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "second-" + i));
            }
            producer.commitTransaction();
        }
        List<String> committed = Conn.values(conn.readToEnd(topic, "read_committed", 20000));
        JavaChecks.expect(committed.size() == 15, "read_committed read %d of 15 records: %s", committed.size(),
                committed);
        return "two committed transactions (10 + 5 records) read back under read_committed";
    }

    static String abort(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("txn-abort"), 1);
        try (KafkaProducer<String, String> producer = transactional(conn, Conn.unique("tx-abort"))) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, "aborted-" + i));
            }
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "kept"));
            producer.commitTransaction();
        }
        List<String> committed = Conn.values(conn.readToEnd(topic, "read_committed", 20000));
        List<String> uncommitted = Conn.values(conn.readToEnd(topic, "read_uncommitted", 20000));
        JavaChecks.expect(committed.equals(List.of("kept")), "read_committed read %s", committed);
        JavaChecks.expect(uncommitted.size() == 11, "read_uncommitted read %d of 11 records: %s",
                uncommitted.size(), uncommitted);
        return "read_committed skips the 10 aborted records, read_uncommitted sees all 11";
    }

    static String isolation(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("txn-isolation"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = transactional(conn, Conn.unique("tx-iso"));
             KafkaConsumer<String, String> committed = conn.consumer("isolation.level", "read_committed");
             KafkaConsumer<String, String> uncommitted = conn.consumer("isolation.level", "read_uncommitted")) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, "open-" + i));
            }
            producer.flush();
            committed.assign(List.of(tp));
            uncommitted.assign(List.of(tp));
            long lso = committed.endOffsets(List.of(tp)).get(tp);
            long hw = uncommitted.endOffsets(List.of(tp)).get(tp);
            JavaChecks.expect(lso == 0 && hw == 5, "open transaction: read_committed end %d (expected 0), "
                    + "read_uncommitted end %d (expected 5)", lso, hw);
            List<String> dirty = new ArrayList<>();
            Conn.waitUntil(() -> dirty.size() >= 5,
                    () -> uncommitted.poll(Duration.ofMillis(200)).forEach(rec -> dirty.add(rec.value())), 15000,
                    () -> "read_uncommitted to see the open transaction's 5 records, has " + dirty);
            List<String> clean = new ArrayList<>();
            long until = System.currentTimeMillis() + 1500;
            while (System.currentTimeMillis() < until) {
                committed.poll(Duration.ofMillis(200)).forEach(rec -> clean.add(rec.value()));
            }
            JavaChecks.expect(clean.isEmpty(), "read_committed read %s before the commit", clean);
            producer.commitTransaction();
            Conn.waitUntil(() -> clean.size() >= 5,
                    () -> committed.poll(Duration.ofMillis(200)).forEach(rec -> clean.add(rec.value())), 15000,
                    () -> "read_committed to see the committed records, has " + clean);
            JavaChecks.expect(clean.equals(dirty), "read_committed read %s, read_uncommitted %s", clean, dirty);
        }
        return "an open transaction: visible to read_uncommitted only (LSO 0, HW 5); after commit to both";
    }

    static String consumeTransformProduce(Conn conn) throws Exception {
        String input = conn.createTopic(Conn.unique("ctp-in"), 2);
        String output = conn.createTopic(Conn.unique("ctp-out"), 2);
        List<String> values = ConsumerChecks.produce(conn, input, 20, "in");
        String group = Conn.unique("g-ctp");
        int transformed = 0;
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", group,
                "isolation.level", "read_committed", "heartbeat.interval.ms", "500");
             KafkaProducer<String, String> producer = transactional(conn, Conn.unique("tx-ctp"))) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            long deadline = System.currentTimeMillis() + 30000;
            while (transformed < values.size()) {
                JavaChecks.expect(System.currentTimeMillis() < deadline, "transformed %d of %d records",
                        transformed, values.size());
                List<ConsumerRecord<String, String>> batch = new ArrayList<>();
                consumer.poll(Duration.ofMillis(200)).forEach(batch::add);
                if (batch.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> rec : batch) {
                    producer.send(new ProducerRecord<>(output, rec.key(), rec.value().toUpperCase()));
                    offsets.put(new TopicPartition(rec.topic(), rec.partition()),
                            new OffsetAndMetadata(rec.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                transformed += batch.size();
            }
        }
        List<String> out = Conn.values(conn.readToEnd(output, "read_committed", 20000));
        JavaChecks.expect(out.size() == values.size(), "output has %d of %d records", out.size(), values.size());
        try (KafkaConsumer<String, String> probe = conn.consumer("group.id", group)) {
            Map<TopicPartition, OffsetAndMetadata> committed = probe.committed(
                    Set.of(new TopicPartition(input, 0), new TopicPartition(input, 1)));
            long sum = committed.values().stream().mapToLong(o -> o == null ? 0 : o.offset()).sum();
            JavaChecks.expect(sum == values.size(), "the group's committed input offsets sum to %d: %s", sum,
                    committed);
        }
        return values.size() + " records transformed; output and the group's offsets committed together";
    }

    static String fencing(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("txn-fence"), 1);
        String id = Conn.unique("tx-fence");
        KafkaProducer<String, String> zombie = transactional(conn, id);
        String outcome;
        try {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, "zombie")).get();
            try (KafkaProducer<String, String> successor = transactional(conn, id)) {
                successor.initTransactions();
                successor.beginTransaction();
                successor.send(new ProducerRecord<>(topic, "successor"));
                successor.commitTransaction();
            }
            try {
                // EndTxn with the old epoch: the coordinator answers PRODUCER_FENCED
                zombie.commitTransaction();
                throw new JavaChecks.Failed("the zombie's commit succeeded after a new producer took its id");
            } catch (ProducerFencedException e) {
                outcome = "ProducerFencedException";
            } catch (KafkaException e) {
                JavaChecks.expect(e.getCause() instanceof ProducerFencedException,
                        "the zombie's commit failed with %s, not ProducerFencedException", JavaChecks.describe(e));
                outcome = e.getClass().getSimpleName() + " caused by ProducerFencedException";
            }
        } finally {
            zombie.close(Duration.ofSeconds(5));
        }
        List<String> committed = Conn.values(conn.readToEnd(topic, "read_committed", 20000));
        JavaChecks.expect(committed.equals(List.of("successor")), "read_committed read %s", committed);
        return "the zombie got " + outcome + "; its records were aborted, the successor's committed";
    }
}
