import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** The consumer: seeking, offsets for times, commits, and groups (classic assignors and KIP-848). */
final class ConsumerChecks {
    private ConsumerChecks() {}

    static void register(JavaChecks.Registry r, Ctx ctx) {
        Conn conn = ctx.conn;
        r.add("consumer.assign_and_seek", () -> assignSeek(conn));
        r.add("consumer.seek_to_beginning_and_end", () -> seekEnds(conn));
        r.add("consumer.offsets_for_times", () -> offsetsForTimes(conn));
        r.add("consumer.offsets_for_times_in_compressed_batch", () -> offsetsForTimesCompressed(ctx));
        r.add("consumer.out_of_range_reset", () -> outOfRange(conn));
        r.add("consumer.position_and_committed", () -> positionCommitted(conn));
        r.add("consumer.group_range", () -> twoMembers(conn, "range", false,
                "partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor",
                "heartbeat.interval.ms", "500"));
        r.add("consumer.group_cooperative_sticky", () -> twoMembers(conn, "coop", true,
                "partition.assignment.strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                "heartbeat.interval.ms", "500"));
        r.add("consumer.group_protocol_consumer", () -> twoMembers(conn, "kip848", true,
                "group.protocol", "consumer"));
        r.add("consumer.static_membership", () -> staticMembership(ctx));
        r.add("consumer.subscribe_pattern", () -> pattern(conn));
        r.add("consumer.commit_sync_and_async", () -> commits(conn));
        r.add("consumer.resume_after_commit", () -> resume(conn));
    }

    /** Writes {@code n} records "prefix-i" spread over the topic's partitions; returns the values. */
    static List<String> produce(Conn conn, String topic, int n, String prefix) throws Exception {
        List<String> values = new ArrayList<>();
        try (KafkaProducer<String, String> producer = conn.producer()) {
            for (int i = 0; i < n; i++) {
                String v = prefix + "-" + i;
                values.add(v);
                producer.send(new ProducerRecord<>(topic, "key-" + i, v));
            }
            producer.flush();
        }
        return values;
    }

    static String assignSeek(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("seek"), 1);
        produce(conn, topic, 100, "v");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = conn.consumer()) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 40);
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            Conn.waitUntil(() -> !got.isEmpty(), () -> consumer.poll(Duration.ofMillis(200)).forEach(got::add),
                    15000, () -> "records after seek(40)");
            JavaChecks.expect(got.get(0).offset() == 40 && "v-40".equals(got.get(0).value()),
                    "after seek(40) the first record is %d %s", got.get(0).offset(), got.get(0).value());
            consumer.seek(tp, 95);
            List<ConsumerRecord<String, String>> tail = new ArrayList<>();
            Conn.waitUntil(() -> consumer.position(tp) >= 100,
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(tail::add), 15000,
                    () -> "offset 100 after seek(95), position " + consumer.position(tp));
            List<Long> offsets = tail.stream().map(ConsumerRecord::offset).collect(Collectors.toList());
            JavaChecks.expect(offsets.equals(List.of(95L, 96L, 97L, 98L, 99L)), "after seek(95): %s", offsets);
        }
        return "seek(40) and seek(95) read from those offsets";
    }

    static String seekEnds(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("ends"), 2);
        produce(conn, topic, 50, "v");
        List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
        try (KafkaConsumer<String, String> consumer = conn.consumer()) {
            consumer.assign(tps);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            long total = end.values().stream().mapToLong(Long::longValue).sum();
            JavaChecks.expect(begin.values().stream().allMatch(o -> o == 0) && total == 50,
                    "beginning %s, end %s for 50 records", begin, end);
            consumer.seekToEnd(tps);
            for (TopicPartition tp : tps) {
                JavaChecks.expect(consumer.position(tp) == end.get(tp), "seekToEnd: position %d, end %d",
                        consumer.position(tp), end.get(tp));
            }
            ConsumerRecords<String, String> none = consumer.poll(Duration.ofMillis(500));
            JavaChecks.expect(none.isEmpty(), "%d records after seekToEnd", none.count());
            try (KafkaProducer<String, String> producer = conn.producer()) {
                producer.send(new ProducerRecord<>(topic, 1, "late", "late")).get();
            }
            List<String> late = new ArrayList<>();
            Conn.waitUntil(() -> !late.isEmpty(),
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> late.add(rec.value())), 15000,
                    () -> "the record written after seekToEnd");
            JavaChecks.expect(late.equals(List.of("late")), "after seekToEnd read %s", late);
            consumer.seekToBeginning(tps);
            List<String> all = new ArrayList<>();
            Conn.waitUntil(() -> all.size() >= 51,
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> all.add(rec.value())), 15000,
                    () -> "51 records after seekToBeginning, have " + all.size());
            return "beginning " + begin.values() + ", end " + end.values() + "; seekToEnd then one new record;"
                    + " seekToBeginning reads all 51";
        }
    }

    static String offsetsForTimes(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("times"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 3_600_000;
        try (KafkaProducer<String, String> producer = conn.producer()) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, base + i * 1000L, null, "t" + i));
            }
            producer.flush();
        }
        try (KafkaConsumer<String, String> consumer = conn.consumer()) {
            OffsetAndTimestamp mid = consumer.offsetsForTimes(Map.of(tp, base + 4500)).get(tp);
            JavaChecks.expect(mid != null && mid.offset() == 5 && mid.timestamp() == base + 5000,
                    "offsetsForTimes(t4.5) = %s, expected offset 5 at t5", mid);
            OffsetAndTimestamp first = consumer.offsetsForTimes(Map.of(tp, 0L)).get(tp);
            JavaChecks.expect(first != null && first.offset() == 0, "offsetsForTimes(0) = %s", first);
            OffsetAndTimestamp after = consumer.offsetsForTimes(Map.of(tp, base + 60_000)).get(tp);
            JavaChecks.expect(after == null, "offsetsForTimes(after the last record) = %s, expected null", after);
        }
        return "t4.5 -> offset 5 (t5), 0 -> offset 0, after the end -> null";
    }

    /**
     * Ten records in one gzip batch, timestamps t0..t9 with t7 the largest: the broker must look
     * inside the batch to answer offsetsForTimes and ListOffsets' max timestamp.
     */
    static String offsetsForTimesCompressed(Ctx ctx) throws Exception {
        Conn conn = ctx.conn;
        String topic = conn.createTopic(Conn.unique("times-gzip"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 3_600_000;
        try (KafkaProducer<String, String> producer = conn.producer("compression.type", "gzip",
                "linger.ms", "1000", "batch.size", "100000")) {
            for (int i = 0; i < 10; i++) {
                long ts = i == 7 ? base + 60_000 : base + i * 1000L;
                producer.send(new ProducerRecord<>(topic, 0, ts, null, "t" + i));
            }
            producer.flush();
        }
        try (KafkaConsumer<String, String> consumer = conn.consumer()) {
            OffsetAndTimestamp mid = consumer.offsetsForTimes(Map.of(tp, base + 4500)).get(tp);
            JavaChecks.expect(mid != null && mid.offset() == 5 && mid.timestamp() == base + 5000,
                    "offsetsForTimes(t4.5) inside a gzip batch = %s, expected offset 5 at t5", mid);
        }
        org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo max = ctx.admin()
                .listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.maxTimestamp()))
                .partitionResult(tp).get();
        JavaChecks.expect(max.offset() == 7 && max.timestamp() == base + 60_000,
                "max timestamp inside a gzip batch: offset %d at %d, expected offset 7 at %d", max.offset(),
                max.timestamp(), base + 60_000);
        return "inside one gzip batch: t4.5 -> offset 5, max timestamp -> offset 7";
    }

    static String outOfRange(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("out-of-range"), 1);
        produce(conn, topic, 10, "v");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = conn.consumer("auto.offset.reset", "earliest")) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 1000);
            List<Long> offsets = new ArrayList<>();
            Conn.waitUntil(() -> !offsets.isEmpty(),
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> offsets.add(rec.offset())), 15000,
                    () -> "records after seek(1000) with auto.offset.reset=earliest");
            JavaChecks.expect(offsets.get(0) == 0, "earliest reset: first offset %d", offsets.get(0));
        }
        try (KafkaConsumer<String, String> consumer = conn.consumer("auto.offset.reset", "latest")) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 1000);
            Conn.waitUntil(() -> consumer.position(tp) == 10, () -> consumer.poll(Duration.ofMillis(200)), 15000,
                    () -> "position 10 after seek(1000) with auto.offset.reset=latest, at " + consumer.position(tp));
        }
        try (KafkaConsumer<String, String> consumer = conn.consumer("auto.offset.reset", "none")) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 1000);
            long deadline = System.currentTimeMillis() + 15000;
            while (true) {
                JavaChecks.expect(System.currentTimeMillis() < deadline,
                        "no OffsetOutOfRangeException with auto.offset.reset=none");
                try {
                    consumer.poll(Duration.ofMillis(200));
                } catch (org.apache.kafka.clients.consumer.OffsetOutOfRangeException e) {
                    break;
                }
            }
        }
        return "offset 1000 of 10: reset to 0 (earliest), to 10 (latest), OffsetOutOfRangeException (none)";
    }

    /**
     * Two static members (group.instance.id) share 4 partitions; one is closed (a static member
     * sends no LeaveGroup) and a new consumer with its instance id takes its place: it gets the
     * same partitions and the other member is not rebalanced.
     */
    static String staticMembership(Ctx ctx) throws Exception {
        Conn conn = ctx.conn;
        String topic = conn.createTopic(Conn.unique("static"), 4);
        String group = Conn.unique("g-static");
        Set<String> seen = new HashSet<>();
        Listener lb = new Listener();
        String[] common = {"group.id", group, "session.timeout.ms", "10000", "heartbeat.interval.ms", "500"};
        try (KafkaConsumer<String, String> b = conn.consumer(with(common, "group.instance.id", "member-b"))) {
            Set<TopicPartition> aOwned;
            try (KafkaConsumer<String, String> a = conn.consumer(with(common, "group.instance.id", "member-a"))) {
                a.subscribe(List.of(topic));
                b.subscribe(List.of(topic), lb);
                Conn.waitUntil(() -> a.assignment().size() == 2 && b.assignment().size() == 2, () -> {
                    poll(a, seen);
                    poll(b, seen);
                }, 30000, () -> "2 + 2 partitions, have " + numbers(a.assignment()) + " + " + numbers(b.assignment()));
                aOwned = new HashSet<>(a.assignment());
            }
            lb.revoked.clear();
            long rejoin = System.nanoTime();
            try (KafkaConsumer<String, String> again = conn.consumer(
                    with(common, "group.instance.id", "member-a"))) {
                again.subscribe(List.of(topic));
                Conn.waitUntil(() -> !again.assignment().isEmpty(), () -> {
                    poll(again, seen);
                    poll(b, seen);
                }, 20000, () -> "the returning static member's assignment");
                long rejoinMs = (System.nanoTime() - rejoin) / 1_000_000;
                JavaChecks.expect(again.assignment().equals(aOwned), "the returning member got %s, it had %s",
                        numbers(again.assignment()), numbers(aOwned));
                JavaChecks.expect(rejoinMs < 5000, "the returning static member waited %d ms for its partitions "
                        + "(session.timeout.ms=10000)", rejoinMs);
                long until = System.currentTimeMillis() + 1500;
                while (System.currentTimeMillis() < until) {
                    poll(again, seen);
                    poll(b, seen);
                }
                JavaChecks.expect(lb.revoked.isEmpty() && b.assignment().size() == 2,
                        "the other member was rebalanced: gave up %s, owns %s", numbers(lb.revoked),
                        numbers(b.assignment()));
                Set<String> instances = ctx.admin().describeConsumerGroups(List.of(group)).describedGroups().get(group)
                        .get().members().stream().map(m -> m.groupInstanceId().orElse("-"))
                        .collect(Collectors.toCollection(TreeSet::new));
                JavaChecks.expect(instances.equals(Set.of("member-a", "member-b")), "described instance ids %s",
                        instances);
            }
            return "member-a came back with its partitions " + numbers(aOwned) + " at once; member-b kept "
                    + numbers(b.assignment()) + " without a rebalance";
        }
    }

    /** {@code base} followed by more key, value pairs. */
    static String[] with(String[] base, String... more) {
        List<String> out = new ArrayList<>(List.of(base));
        out.addAll(List.of(more));
        return out.toArray(new String[0]);
    }

    static String positionCommitted(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("committed"), 2);
        produce(conn, topic, 20, "v");
        String group = Conn.unique("g-committed");
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", group)) {
            consumer.assign(List.of(p0, p1));
            Map<TopicPartition, OffsetAndMetadata> none = consumer.committed(Set.of(p0, p1));
            JavaChecks.expect(none.get(p0) == null && none.get(p1) == null, "committed before any commit: %s", none);
            JavaChecks.expect(consumer.position(p0) == 0, "position with no commit and earliest: %d",
                    consumer.position(p0));
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(3, "note: three")));
            OffsetAndMetadata got = consumer.committed(Set.of(p0)).get(p0);
            JavaChecks.expect(got != null && got.offset() == 3 && "note: three".equals(got.metadata()),
                    "committed(p0) = %s", got);
        }
        try (KafkaConsumer<String, String> again = conn.consumer("group.id", group)) {
            again.assign(List.of(p0));
            long position = again.position(p0);
            JavaChecks.expect(position == 3, "a new consumer of the group starts at %d, not the commit 3", position);
        }
        return "committed() null before, (3, metadata) after; a new member starts at 3";
    }

    /** A rebalance listener remembering every partition it was told to give up. */
    static final class Listener implements ConsumerRebalanceListener {
        final Set<TopicPartition> revoked = new HashSet<>();

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            revoked.addAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        }
    }

    private static Set<Integer> numbers(Set<TopicPartition> tps) {
        return tps.stream().map(TopicPartition::partition).collect(Collectors.toCollection(TreeSet::new));
    }

    /**
     * Two members of one group on a 4-partition topic: the first alone gets all four, the
     * second joins and each ends with two (disjoint), the second leaves and the first gets all
     * four back; between them they read every record. When the second joins, the first gives
     * up exactly the partitions the second gets if {@code incremental} (cooperative protocols),
     * all four if not (eager).
     */
    static String twoMembers(Conn conn, String name, boolean incremental, String... settings) throws Exception {
        String topic = conn.createTopic(Conn.unique("group-" + name), 4);
        List<String> values = produce(conn, topic, 40, name);
        String group = Conn.unique("g-" + name);
        List<String> props = new ArrayList<>(List.of(settings));
        props.addAll(List.of("group.id", group));
        String[] conf = props.toArray(new String[0]);
        Set<String> seen = new HashSet<>();
        Listener la = new Listener();
        Listener lb = new Listener();
        String shared;
        Set<TopicPartition> revokedAtJoin;
        Set<TopicPartition> second;
        try (KafkaConsumer<String, String> a = conn.consumer(conf)) {
            a.subscribe(List.of(topic), la);
            Conn.waitUntil(() -> a.assignment().size() == 4, () -> poll(a, seen), 30000,
                    () -> "the first member to own 4 partitions, owns " + numbers(a.assignment()));
            KafkaConsumer<String, String> b = conn.consumer(conf);
            try {
                b.subscribe(List.of(topic), lb);
                Conn.waitUntil(() -> a.assignment().size() == 2 && b.assignment().size() == 2
                        && disjoint(a.assignment(), b.assignment()), () -> {
                            poll(a, seen);
                            poll(b, seen);
                        }, 30000, () -> "2 + 2 partitions, have " + numbers(a.assignment()) + " + "
                                + numbers(b.assignment()));
                shared = numbers(a.assignment()) + " + " + numbers(b.assignment());
                revokedAtJoin = new HashSet<>(la.revoked);
                second = new HashSet<>(b.assignment());
                Conn.waitUntil(() -> seen.size() >= values.size(), () -> {
                    poll(a, seen);
                    poll(b, seen);
                }, 20000, () -> "all " + values.size() + " records, have " + seen.size());
            } finally {
                b.close();
            }
            Conn.waitUntil(() -> a.assignment().size() == 4, () -> poll(a, seen), 30000,
                    () -> "the remaining member to own 4 partitions again, owns " + numbers(a.assignment()));
        }
        JavaChecks.expect(seen.containsAll(values), "%d of %d records read", seen.size(), values.size());
        Set<Integer> expectedRevoked = incremental ? numbers(second) : Set.of(0, 1, 2, 3);
        JavaChecks.expect(numbers(revokedAtJoin).equals(expectedRevoked),
                "when the second member joined the first gave up %s, expected %s (%s)", numbers(revokedAtJoin),
                expectedRevoked, incremental ? "incremental" : "eager");
        return "alone 4, shared " + shared + " (the first gave up " + numbers(revokedAtJoin) + "), after the leave 4";
    }

    private static void poll(KafkaConsumer<String, String> consumer, Set<String> seen) {
        for (ConsumerRecord<String, String> rec : consumer.poll(Duration.ofMillis(100))) {
            seen.add(rec.value());
        }
    }

    private static boolean disjoint(Set<TopicPartition> a, Set<TopicPartition> b) {
        Set<TopicPartition> both = new HashSet<>(a);
        both.retainAll(b);
        return both.isEmpty();
    }

    static String pattern(Conn conn) throws Exception {
        String prefix = Conn.unique("pattern");
        String t1 = conn.createTopic(prefix + "-one", 1);
        String t2 = conn.createTopic(prefix + "-two", 1);
        produce(conn, t1, 5, "one");
        produce(conn, t2, 5, "two");
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", Conn.unique("g-pattern"),
                "metadata.max.age.ms", "1000")) {
            consumer.subscribe(Pattern.compile(Pattern.quote(prefix) + "-.*"));
            Conn.waitUntil(() -> seen.size() == 10, () -> poll(consumer, seen), 30000,
                    () -> "10 records from both topics, have " + seen);
            Set<String> topics = consumer.assignment().stream().map(TopicPartition::topic)
                    .collect(Collectors.toCollection(TreeSet::new));
            JavaChecks.expect(topics.equals(new TreeSet<>(List.of(t1, t2))), "assigned topics %s", topics);
        }
        return "a regex subscription got both topics";
    }

    static String commits(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("commits"), 2);
        produce(conn, topic, 30, "v");
        String group = Conn.unique("g-commits");
        List<Exception> asyncErrors = new ArrayList<>();
        AtomicInteger asyncDone = new AtomicInteger();
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", group,
                "heartbeat.interval.ms", "500")) {
            consumer.subscribe(List.of(topic));
            Conn.waitUntil(() -> seen.size() == 30, () -> poll(consumer, seen), 30000,
                    () -> "30 records, have " + seen.size());
            consumer.commitAsync((offsets, e) -> {
                if (e != null) {
                    asyncErrors.add(e);
                }
                asyncDone.incrementAndGet();
            });
            Conn.waitUntil(() -> asyncDone.get() == 1, () -> consumer.poll(Duration.ofMillis(100)), 15000,
                    () -> "the commitAsync callback");
            JavaChecks.expect(asyncErrors.isEmpty(), "commitAsync failed: %s", asyncErrors);
            Map<TopicPartition, OffsetAndMetadata> afterAsync = consumer.committed(consumer.assignment());
            long sum = afterAsync.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            JavaChecks.expect(sum == 30, "after commitAsync the committed offsets sum to %d: %s", sum, afterAsync);
            TopicPartition p0 = new TopicPartition(topic, 0);
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(1)));
            long p0Offset = consumer.committed(Set.of(p0)).get(p0).offset();
            JavaChecks.expect(p0Offset == 1, "commitSync(p0 -> 1) reads back %d", p0Offset);
        }
        return "commitAsync committed all 30 (callback without error); commitSync moved p0 to 1";
    }

    static String resume(Conn conn) throws Exception {
        String topic = conn.createTopic(Conn.unique("resume"), 1);
        List<String> values = produce(conn, topic, 20, "v");
        String group = Conn.unique("g-resume");
        List<String> first = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", group, "max.poll.records", "10",
                "heartbeat.interval.ms", "500")) {
            consumer.subscribe(List.of(topic));
            Conn.waitUntil(() -> !first.isEmpty(),
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> first.add(rec.value())), 30000,
                    () -> "the first poll's records");
            consumer.commitSync();
        }
        List<String> second = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", group,
                "heartbeat.interval.ms", "500")) {
            consumer.subscribe(List.of(topic));
            Conn.waitUntil(() -> first.size() + second.size() >= values.size(),
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> second.add(rec.value())), 30000,
                    () -> "the rest after the commit, have " + second.size());
            consumer.poll(Duration.ofMillis(300)).forEach(rec -> second.add(rec.value()));
        }
        List<String> both = new ArrayList<>(first);
        both.addAll(second);
        JavaChecks.expect(both.equals(values), "first member read %d, the next %d: %s", first.size(),
                second.size(), both);
        return "the first member read " + first.size() + " and committed; the next read the other "
                + second.size() + ", none twice";
    }
}
