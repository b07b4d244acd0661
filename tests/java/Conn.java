import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * How to reach one listener of the broker (bootstrap and security settings), and the clients
 * made from it. Every client gets short timeouts so a broker that does not answer fails a check
 * within seconds instead of the client's defaults (minutes). Clients made here belong to the
 * caller, who closes them.
 */
final class Conn {
    final Properties base;

    Conn(Properties base) {
        this.base = base;
    }

    static Conn plaintext(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return new Conn(p);
    }

    /** This connection's settings plus the given key, value pairs (later ones win). */
    Properties props(String... keysAndValues) {
        Properties p = new Properties();
        p.putAll(base);
        for (int i = 0; i < keysAndValues.length; i += 2) {
            p.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return p;
    }

    KafkaProducer<String, String> producer(String... overrides) {
        Properties p = props("request.timeout.ms", "10000", "delivery.timeout.ms", "30000",
                "max.block.ms", "20000", "linger.ms", "5");
        p.putAll(props(overrides));
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    KafkaConsumer<String, String> consumer(String... overrides) {
        Properties p = props("request.timeout.ms", "10000", "default.api.timeout.ms", "20000",
                "auto.offset.reset", "earliest", "enable.auto.commit", "false");
        p.putAll(props(overrides));
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    Admin admin(String... overrides) {
        Properties p = props("request.timeout.ms", "10000", "default.api.timeout.ms", "20000");
        p.putAll(props(overrides));
        return Admin.create(p);
    }

    /** A topic name no other check uses. */
    static String unique(String prefix) {
        return "java-" + prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Creates the topic (RF 1 unless given) and returns its name. */
    String createTopic(String name, int partitions, String... configs) throws Exception {
        return createTopic(name, partitions, (short) 1, configs);
    }

    String createTopic(String name, int partitions, short replicationFactor, String... configs)
            throws Exception {
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < configs.length; i += 2) {
            map.put(configs[i], configs[i + 1]);
        }
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, replicationFactor).configs(map)))
                    .all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
        return name;
    }

    /**
     * Every record of the topic from the beginning up to its end offsets as the consumer sees
     * them when it starts (the last stable offsets under read_committed), by assignment, in
     * poll order. Fails if the end is not reached within {@code timeoutMs}.
     */
    List<ConsumerRecord<String, String>> readToEnd(String topic, String isolation, long timeoutMs)
            throws Exception {
        try (KafkaConsumer<String, String> consumer = consumer("isolation.level", isolation)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(info -> new TopicPartition(topic, info.partition()))
                    .collect(Collectors.toList());
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (true) {
                boolean done = true;
                for (TopicPartition tp : partitions) {
                    done &= consumer.position(tp) >= end.get(tp);
                }
                if (done) {
                    return out;
                }
                JavaChecks.expect(System.currentTimeMillis() < deadline,
                        "reading %s (%s): %d records, still short of the end offsets %s",
                        topic, isolation, out.size(), end);
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
    }

    /** The records' values, in order. */
    static List<String> values(List<ConsumerRecord<String, String>> records) {
        return records.stream().map(ConsumerRecord::value).collect(Collectors.toList());
    }

    /**
     * Calls {@code step} until {@code done} holds; after {@code timeoutMs} fails with {@code what}
     * (asked then, so it can describe the state reached).
     */
    static void waitUntil(BooleanSupplier done, Runnable step, long timeoutMs, Supplier<String> what)
            throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() >= deadline) {
                throw new JavaChecks.Failed("timed out waiting for " + what.get());
            }
            step.run();
        }
    }
}
