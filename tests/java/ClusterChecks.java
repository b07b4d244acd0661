import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * A partition leader SIGKILLed under an idempotent acks=all producer, on a 3-broker cluster.
 *
 * <p>Options: {@code topic} (made by the caller: RF 3, min.insync.replicas=2), {@code records}
 * (default 50000), {@code kill.after} (default 10000). The producer sends records numbered
 * 0..records-1; once {@code kill.after} are acknowledged it prints
 * {@code {"event": "kill", "acked": N}} and the caller SIGKILLs a leader and writes a line to
 * this process's stdin. The producer does not send past half of the records before that line
 * arrives (or 60 s pass), so at least half are written after the kill. Then every record must
 * be acknowledged, and reading the topic back must find each exactly once, where its
 * acknowledgement said, in send order within each partition.
 */
final class ClusterChecks {
    private ClusterChecks() {}

    /** Where each record was acknowledged: partition and offset by record number. */
    private static final Map<Integer, long[]> ACKED = new ConcurrentHashMap<>();

    static void register(JavaChecks.Registry r, Ctx ctx) {
        String topic = ctx.option("topic");
        int records = Integer.parseInt(ctx.options.getOrDefault("records", "50000"));
        int killAfter = Integer.parseInt(ctx.options.getOrDefault("kill.after", "10000"));
        r.add("cluster.produce_through_leader_kill", () -> produce(ctx.conn, topic, records, killAfter));
        r.add("cluster.consumer_during_leader_kill", () -> LIVE.get(180, TimeUnit.SECONDS));
        r.add("cluster.read_back_after_leader_kill", () -> readBack(ctx.conn, topic, records));
    }

    /** What the consumer reading while the producer writes (and the leader dies) found. */
    private static final CompletableFuture<String> LIVE = new CompletableFuture<>();

    /**
     * Reads the topic by assignment from the beginning while it is written, until all
     * {@code records} are in (or 150 s pass): completes {@link #LIVE} with a summary, or with a
     * failure naming duplicates and out-of-order records.
     */
    private static void consumeWhileProducing(Conn conn, String topic, int records) {
        Thread t = new Thread(() -> {
            try (KafkaConsumer<String, String> consumer = conn.consumer()) {
                List<TopicPartition> partitions = new ArrayList<>();
                consumer.partitionsFor(topic).forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
                consumer.assign(partitions);
                consumer.seekToBeginning(partitions);
                Map<Integer, Integer> last = new HashMap<>();
                java.util.Set<Integer> seen = new java.util.HashSet<>();
                List<String> problems = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 150_000;
                while (seen.size() < records && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> rec : consumer.poll(Duration.ofMillis(200))) {
                        int number = Integer.parseInt(rec.value().substring("record-".length()));
                        if (!seen.add(number) && problems.size() < 10) {
                            problems.add("record " + number + " twice (partition " + rec.partition() + ", offset "
                                    + rec.offset() + ")");
                        }
                        if (number <= last.getOrDefault(rec.partition(), -1) && problems.size() < 10) {
                            problems.add("partition " + rec.partition() + ": record " + number + " after "
                                    + last.get(rec.partition()));
                        }
                        last.put(rec.partition(), number);
                    }
                }
                if (seen.size() < records || !problems.isEmpty()) {
                    LIVE.completeExceptionally(new JavaChecks.Failed("the live consumer read " + seen.size() + " of "
                            + records + " distinct records; " + problems));
                } else {
                    LIVE.complete("a consumer reading throughout got all " + records + " records once each, in order");
                }
            } catch (Exception e) {
                LIVE.completeExceptionally(e);
            }
        }, "live-consumer");
        t.setDaemon(true);
        t.start();
    }

    static String produce(Conn conn, String topic, int records, int killAfter) throws Exception {
        CountDownLatch killed = new CountDownLatch(1);
        String[] killedWhat = {"nothing"};
        Thread stdin = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line = in.readLine();
                killedWhat[0] = line == null ? "stdin closed" : line;
            } catch (Exception e) {
                killedWhat[0] = e.toString();
            }
            killed.countDown();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        consumeWhileProducing(conn, topic, records);
        AtomicInteger acked = new AtomicInteger();
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        boolean announced = false;
        long heldMs = 0;
        try (KafkaProducer<String, String> producer = conn.producer("enable.idempotence", "true", "acks", "all",
                "max.in.flight.requests.per.connection", "5", "delivery.timeout.ms", "120000",
                "request.timeout.ms", "10000", "retry.backoff.ms", "200", "max.block.ms", "60000",
                "linger.ms", "5")) {
            for (int i = 0; i < records; i++) {
                if (!announced && acked.get() >= killAfter) {
                    JavaChecks.Json.line("event", "kill", "acked", acked.get());
                    announced = true;
                }
                if (i == records / 2) {
                    while (!announced) { // not yet acknowledged enough to announce: wait for the acks
                        if (acked.get() >= killAfter) {
                            JavaChecks.Json.line("event", "kill", "acked", acked.get());
                            announced = true;
                        } else {
                            Thread.sleep(10);
                        }
                    }
                    long held = System.nanoTime();
                    JavaChecks.expect(killed.await(60, TimeUnit.SECONDS), "no word of the kill within 60 s");
                    heldMs = (System.nanoTime() - held) / 1_000_000;
                }
                int number = i;
                producer.send(new ProducerRecord<>(topic, "key-" + (i % 64), "record-" + i), (md, e) -> {
                    if (e != null) {
                        if (errors.size() < 10) {
                            errors.add(number + ": " + JavaChecks.describe(e));
                        }
                    } else {
                        ACKED.put(number, new long[] {md.partition(), md.offset()});
                        acked.incrementAndGet();
                    }
                });
            }
            producer.flush();
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        JavaChecks.expect(errors.isEmpty(), "%d of %d acknowledged; errors: %s", acked.get(), records, errors);
        JavaChecks.expect(acked.get() == records, "%d of %d acknowledged", acked.get(), records);
        return records + " records acknowledged in " + ms + " ms (" + killedWhat[0] + "; held " + heldMs
                + " ms at the halfway mark)";
    }

    static String readBack(Conn conn, String topic, int records) throws Exception {
        List<ConsumerRecord<String, String>> read = conn.readToEnd(topic, "read_uncommitted", 60000);
        Map<Integer, Integer> copies = new HashMap<>();
        Map<Integer, Integer> lastInPartition = new HashMap<>();
        List<String> problems = new ArrayList<>();
        for (ConsumerRecord<String, String> rec : read) {
            int number = Integer.parseInt(rec.value().substring("record-".length()));
            copies.merge(number, 1, Integer::sum);
            int previous = lastInPartition.getOrDefault(rec.partition(), -1);
            if (number <= previous && problems.size() < 10) {
                problems.add("partition " + rec.partition() + ": record " + number + " at offset " + rec.offset()
                        + " after record " + previous);
            }
            lastInPartition.put(rec.partition(), number);
            long[] where = ACKED.get(number);
            if (where != null && (where[0] != rec.partition() || where[1] != rec.offset()) && problems.size() < 10) {
                problems.add("record " + number + " acknowledged at " + where[0] + "/" + where[1] + ", read at "
                        + rec.partition() + "/" + rec.offset());
            }
        }
        long duplicates = copies.values().stream().filter(c -> c > 1).count();
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            if (!copies.containsKey(i)) {
                missing.add(i);
            }
        }
        JavaChecks.expect(missing.isEmpty() && duplicates == 0 && problems.isEmpty(),
                "read %d records: %d missing (first %s), %d duplicated, %s", read.size(), missing.size(),
                missing.subList(0, Math.min(10, missing.size())), duplicates, problems);
        return read.size() + " records read back: none missing, none twice, in order per partition, each where "
                + "acknowledged";
    }
}
