import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;

/**
 * SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and TLS (server verification, client
 * certificates) against a broker with one listener of each kind.
 *
 * <p>Options: {@code bootstrap} (PLAINTEXT, for setup), {@code plain.bootstrap}
 * (SASL_PLAINTEXT), {@code scram.bootstrap} (SASL_SSL), {@code ssl.bootstrap} (SSL with
 * ssl.client.auth=required), {@code ca} (PEM of the CA that signed the broker), {@code
 * untrusted.ca}, {@code keystore} (PEM key + certificate the broker trusts), {@code
 * untrusted.keystore} (one it does not), and {@code users}: {@code name:mechanism:password}
 * entries separated by commas (mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512).
 */
final class SecurityChecks {
    private SecurityChecks() {}

    /** Connections that must fail give up after this long (a broker bug shows as a timeout). */
    static final String FAIL_FAST_MS = "10000";

    static void register(JavaChecks.Registry r, Ctx ctx) {
        for (String entry : ctx.option("users").split(",")) {
            String[] parts = entry.split(":", 3);
            String user = parts[0];
            String mechanism = parts[1];
            String password = parts[2];
            String name = mechanism.toLowerCase().replace('-', '_');
            r.add("security." + name + ".produce_consume",
                    () -> produceConsume(ctx, sasl(ctx, mechanism, user, password), name));
            r.add("security." + name + ".wrong_password",
                    () -> refused(sasl(ctx, mechanism, user, password + "-wrong"), SaslAuthenticationException.class));
        }
        r.add("security.scram_user_created_by_java_admin", () -> scramCreatedByJava(ctx));
        r.add("security.reauthentication", () -> reauthentication(ctx));
        r.add("security.mtls.produce_consume",
                () -> produceConsume(ctx, tls(ctx, ctx.option("ca"), ctx.option("keystore")), "mtls"));
        r.add("security.tls.untrusted_broker_refused",
                () -> refused(tls(ctx, ctx.option("untrusted.ca"), ctx.option("keystore")),
                        SslAuthenticationException.class));
        r.add("security.mtls.untrusted_client_cert_refused",
                () -> refused(tls(ctx, ctx.option("ca"), ctx.option("untrusted.keystore")),
                        SslAuthenticationException.class));
        r.add("security.mtls.no_client_cert_fails_fast",
                () -> refused(tls(ctx, ctx.option("ca"), null), SslAuthenticationException.class));
        r.add("security.mtls.no_client_cert_fails_fast_tls12",
                () -> refused(tls12(tls(ctx, ctx.option("ca"), null)), SslAuthenticationException.class));
    }

    static String plainJaas(String user, String password) {
        return "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user
                + "\" password=\"" + password + "\";";
    }

    static String scramJaas(String user, String password) {
        return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
                + "\" password=\"" + password + "\";";
    }

    /** PLAIN over SASL_PLAINTEXT, SCRAM over SASL_SSL (verifying the broker with {@code ca}). */
    static Conn sasl(Ctx ctx, String mechanism, String user, String password) {
        Properties p = new Properties();
        if (mechanism.equals("PLAIN")) {
            p.put("bootstrap.servers", ctx.option("plain.bootstrap"));
            p.put("security.protocol", "SASL_PLAINTEXT");
            p.put("sasl.jaas.config", plainJaas(user, password));
        } else {
            p.put("bootstrap.servers", ctx.option("scram.bootstrap"));
            p.put("security.protocol", "SASL_SSL");
            p.put("sasl.jaas.config", scramJaas(user, password));
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", ctx.option("ca"));
        }
        p.put("sasl.mechanism", mechanism);
        return new Conn(p);
    }

    /** The SSL listener, trusting {@code truststore}, presenting {@code keystore} unless null. */
    static Conn tls(Ctx ctx, String truststore, String keystore) {
        Properties p = new Properties();
        p.put("bootstrap.servers", ctx.option("ssl.bootstrap"));
        p.put("security.protocol", "SSL");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", truststore);
        if (keystore != null) {
            p.put("ssl.keystore.type", "PEM");
            p.put("ssl.keystore.location", keystore);
        }
        return new Conn(p);
    }

    /** {@code conn} limited to TLS 1.2 (the client certificate is asked for within the handshake). */
    static Conn tls12(Conn conn) {
        return new Conn(conn.props("ssl.protocol", "TLSv1.2", "ssl.enabled.protocols", "TLSv1.2"));
    }

    /**
     * Over {@code conn}: an Admin lists topics, an idempotent producer writes 30 records to a
     * new topic, a group consumer reads them all and commits.
     */
    static String produceConsume(Ctx ctx, Conn conn, String name) throws Exception {
        String topic = Conn.unique("sec-" + name.replace('_', '-'));
        try (Admin admin = conn.admin()) {
            admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 2, (short) 1))).all().get();
            JavaChecks.expect(admin.listTopics().names().get().contains(topic), "listTopics lacks %s", topic);
        }
        Set<String> sent = new HashSet<>();
        try (KafkaProducer<String, String> producer = conn.producer("enable.idempotence", "true", "acks", "all")) {
            for (int i = 0; i < 30; i++) {
                String v = name + "-" + i;
                sent.add(v);
                producer.send(new ProducerRecord<>(topic, "k" + i, v));
            }
            producer.flush();
        }
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = conn.consumer("group.id", "g-" + topic,
                "heartbeat.interval.ms", "500")) {
            consumer.subscribe(List.of(topic));
            Conn.waitUntil(() -> seen.size() == 30,
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> seen.add(rec.value())), 30000,
                    () -> "30 records, have " + seen.size());
            consumer.commitSync();
        }
        JavaChecks.expect(seen.equals(sent), "read %s", seen);
        return "admin created and listed a topic; 30 records produced (idempotent), consumed and committed";
    }

    /** An Admin call over {@code conn} must fail with {@code expected} within FAIL_FAST_MS. */
    static String refused(Conn conn, Class<? extends Exception> expected) throws Exception {
        long start = System.nanoTime();
        try (Admin admin = conn.admin("default.api.timeout.ms", FAIL_FAST_MS, "request.timeout.ms", "5000")) {
            String id = admin.describeCluster().clusterId().get();
            throw new JavaChecks.Failed("connected and described cluster " + id);
        } catch (ExecutionException e) {
            long ms = (System.nanoTime() - start) / 1_000_000;
            JavaChecks.expect(expected.isInstance(e.getCause()), "expected %s, got after %d ms: %s",
                    expected.getSimpleName(), ms, JavaChecks.describe(e.getCause()));
            return expected.getSimpleName() + " after " + ms + " ms: " + e.getCause().getMessage();
        }
    }

    /**
     * The broker runs with {@code reauth.ms=} as connections.max.reauth.ms: a SCRAM producer
     * writing for three times that long re-authenticates on its connection (KIP-368) and every
     * record is acknowledged.
     */
    static String reauthentication(Ctx ctx) throws Exception {
        long reauthMs = Long.parseLong(ctx.option("reauth.ms"));
        String[] bob = null;
        for (String entry : ctx.option("users").split(",")) {
            if (entry.split(":", 3)[1].equals("SCRAM-SHA-512")) {
                bob = entry.split(":", 3);
            }
        }
        JavaChecks.expect(bob != null, "no SCRAM-SHA-512 user in users=");
        Conn conn = sasl(ctx, bob[1], bob[0], bob[2]);
        String topic = ctx.conn.createTopic(Conn.unique("sec-reauth"), 1);
        long until = System.currentTimeMillis() + 3 * reauthMs;
        int sent = 0;
        try (KafkaProducer<String, String> producer = conn.producer("acks", "all")) {
            while (System.currentTimeMillis() < until) {
                producer.send(new ProducerRecord<>(topic, "r" + sent)).get();
                sent++;
                Thread.sleep(100);
            }
            double reauths = producer.metrics().entrySet().stream()
                    .filter(e -> e.getKey().name().equals("successful-reauthentication-total"))
                    .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
            JavaChecks.expect(reauths >= 1, "no re-authentication in %d ms with connections.max.reauth.ms=%d",
                    3 * reauthMs, reauthMs);
            return sent + " records over " + 3 * reauthMs + " ms as " + bob[0] + " (" + bob[1] + "), " + (long) reauths
                    + " re-authentications";
        }
    }

    static String scramCreatedByJava(Ctx ctx) throws Exception {
        String user = Conn.unique("dave");
        ctx.admin().alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "dave-secret"))).all().get();
        Conn conn = sasl(ctx, "SCRAM-SHA-512", user, "dave-secret");
        try (Admin admin = conn.admin();
             KafkaProducer<String, String> producer = conn.producer()) {
            String id = admin.describeCluster().clusterId().get();
            String topic = ctx.conn.createTopic(Conn.unique("sec-dave"), 1);
            long offset = producer.send(new ProducerRecord<>(topic, "from dave")).get().offset();
            return "a SCRAM-SHA-512 user upserted by the Java Admin logged in (cluster " + id + ") and wrote offset "
                    + offset;
        }
    }
}
