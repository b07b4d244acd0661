import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterPartitionReassignmentsOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Partition reassignment through Kafka's AdminClient on a cluster of at least three brokers:
 * alterPartitionReassignments / listPartitionReassignments (librdkafka has neither).
 *
 * <p>{@code reassign.move_and_read}: an RF 2 topic with records; each partition's first replica is
 * replaced by a broker that holds none of it; the reassignments are listed until done, the topic
 * then describes the target replicas, and every record reads back. {@code reassign.refusals}: the
 * exceptions Kafka's controller answers for a duplicate replica, cancelling nothing and an unknown
 * partition (kafka-clients 3.9 predates v1's allowReplicationFactorChange).
 */
final class ReassignChecks {
    private ReassignChecks() {}

    static void register(JavaChecks.Registry r, Ctx ctx) {
        r.add("reassign.move_and_read", () -> moveAndRead(ctx));
        r.add("reassign.refusals", () -> refusals(ctx));
    }

    /** The topic's replicas by partition; a topic created a moment ago is waited for (10 s). */
    private static Map<Integer, List<Integer>> replicas(Admin admin, String topic) throws Exception {
        TopicDescription d = null;
        long deadline = System.currentTimeMillis() + 10_000;
        while (d == null) {
            try {
                d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)
                        || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
        Map<Integer, List<Integer>> out = new HashMap<>();
        for (TopicPartitionInfo p : d.partitions()) {
            List<Integer> ids = new ArrayList<>();
            for (Node n : p.replicas()) {
                ids.add(n.id());
            }
            out.put(p.partition(), ids);
        }
        return out;
    }

    static String moveAndRead(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("reassign"), 2, (short) 2);
        int records = 2000;
        try (KafkaProducer<String, String> producer = ctx.conn.producer("acks", "all")) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i));
            }
            producer.flush();
        }
        List<Integer> brokers = new ArrayList<>();
        for (Node n : admin.describeCluster().nodes().get()) {
            brokers.add(n.id());
        }
        Map<Integer, List<Integer>> before = replicas(admin, topic);
        Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
        Map<Integer, List<Integer>> targets = new HashMap<>();
        for (Map.Entry<Integer, List<Integer>> e : before.entrySet()) {
            int spare = brokers.stream().filter(b -> !e.getValue().contains(b)).findFirst().orElseThrow();
            List<Integer> target = new ArrayList<>(e.getValue());
            target.set(0, spare);
            targets.put(e.getKey(), target);
            moves.put(new TopicPartition(topic, e.getKey()), Optional.of(new NewPartitionReassignment(target)));
        }
        admin.alterPartitionReassignments(moves).all().get();
        long deadline = System.currentTimeMillis() + 60_000;
        int polls = 0;
        while (true) {
            Map<TopicPartition, PartitionReassignment> ongoing =
                    admin.listPartitionReassignments().reassignments().get();
            polls++;
            if (ongoing.isEmpty()) {
                break;
            }
            JavaChecks.expect(System.currentTimeMillis() < deadline, "still moving after 60 s: %s", ongoing);
            Thread.sleep(250);
        }
        deadline = System.currentTimeMillis() + 30_000;
        while (!replicas(admin, topic).equals(targets)) {
            JavaChecks.expect(System.currentTimeMillis() < deadline, "replicas %s, wanted %s",
                    replicas(admin, topic), targets);
            Thread.sleep(250);
        }
        int read = 0;
        try (KafkaConsumer<String, String> consumer = ctx.conn.consumer()) {
            List<TopicPartition> parts = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long until = System.currentTimeMillis() + 30_000;
            while (read < records && System.currentTimeMillis() < until) {
                for (ConsumerRecord<String, String> rec : consumer.poll(Duration.ofMillis(500))) {
                    JavaChecks.expect(rec.value().equals("v" + rec.key().substring(1)), "record %s", rec);
                    read++;
                }
            }
        }
        JavaChecks.expect(read == records, "read %d of %d records after the move", read, records);
        return "moved " + before + " -> " + targets + " (" + polls + " list calls), read " + read;
    }

    private static String failure(Admin admin, Map<TopicPartition, Optional<NewPartitionReassignment>> moves,
            AlterPartitionReassignmentsOptions options, Class<?> expected) throws Exception {
        try {
            admin.alterPartitionReassignments(moves, options).all().get();
        } catch (ExecutionException e) {
            JavaChecks.expect(expected.isInstance(e.getCause()), "expected %s, got %s",
                    expected.getSimpleName(), e.getCause());
            return expected.getSimpleName();
        }
        throw new JavaChecks.Failed("expected " + expected.getSimpleName() + ", the call succeeded");
    }

    static String refusals(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("refused"), 1, (short) 2);
        List<Integer> current = replicas(admin, topic).get(0);
        TopicPartition tp = new TopicPartition(topic, 0);
        AlterPartitionReassignmentsOptions plain = new AlterPartitionReassignmentsOptions();
        List<String> seen = new ArrayList<>();
        seen.add(failure(admin, Map.of(tp, Optional.of(new NewPartitionReassignment(
                List.of(current.get(0), current.get(0))))), plain, InvalidReplicaAssignmentException.class));
        seen.add(failure(admin, Map.of(tp, Optional.empty()), plain, NoReassignmentInProgressException.class));
        seen.add(failure(admin, Map.of(new TopicPartition(topic, 5), Optional.of(new NewPartitionReassignment(
                current))), plain, UnknownTopicOrPartitionException.class));
        return String.join(", ", seen);
    }
}
