import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * ACLs on a broker with Kafka's authorizer: the Admin calls (over {@code bootstrap=}, whose
 * principal is a super user) and their effect on a non-super user logging in with SASL/PLAIN
 * over {@code plain.bootstrap=} as {@code user=} / {@code password=}.
 */
final class AclChecks {
    private AclChecks() {}

    static void register(JavaChecks.Registry r, Ctx ctx) {
        r.add("acl.create_describe_delete", () -> createDescribeDelete(ctx));
        r.add("acl.create_invalid", () -> createInvalid(ctx));
        r.add("acl.enforced_for_producer", () -> producer(ctx));
        r.add("acl.idempotent_producer_with_topic_write", () -> idempotent(ctx));
        r.add("acl.enforced_for_consumer_group", () -> consumerGroup(ctx));
        r.add("acl.authorized_operations", () -> authorizedOperations(ctx));
    }

    private static AclBinding binding(ResourceType type, String name, PatternType pattern, String principal,
            AclOperation op, AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry(principal, "*", op, permission));
    }

    private static AclBinding allow(ResourceType type, String name, String principal, AclOperation op) {
        return binding(type, name, PatternType.LITERAL, principal, op, AclPermissionType.ALLOW);
    }

    /** The non-super user's connection (SASL/PLAIN). */
    static Conn user(Ctx ctx) {
        return new Conn(Conn.plaintext(ctx.option("plain.bootstrap")).props(
                "security.protocol", "SASL_PLAINTEXT",
                "sasl.mechanism", "PLAIN",
                "sasl.jaas.config", SecurityChecks.plainJaas(ctx.option("user"), ctx.option("password"))));
    }

    private static String principal(Ctx ctx) {
        return "User:" + ctx.option("user");
    }

    private static Set<String> keys(Collection<AclBinding> bindings) {
        return bindings.stream().map(AclBinding::toString).collect(Collectors.toCollection(TreeSet::new));
    }

    static String createDescribeDelete(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = Conn.unique("acl-topic");
        String prefix = Conn.unique("acl-prefix");
        List<AclBinding> created = List.of(
                allow(ResourceType.TOPIC, topic, "User:reader", AclOperation.READ),
                binding(ResourceType.TOPIC, topic, PatternType.LITERAL, "User:writer", AclOperation.WRITE,
                        AclPermissionType.DENY),
                binding(ResourceType.GROUP, prefix, PatternType.PREFIXED, "User:reader", AclOperation.ALL,
                        AclPermissionType.ALLOW),
                allow(ResourceType.CLUSTER, "kafka-cluster", "User:ops-" + prefix, AclOperation.ALTER),
                allow(ResourceType.TRANSACTIONAL_ID, prefix + "-tx", "User:reader", AclOperation.WRITE));
        admin.createAcls(created).all().get();

        Set<String> all = keys(admin.describeAcls(AclBindingFilter.ANY).values().get());
        JavaChecks.expect(all.containsAll(keys(created)), "describeAcls(ANY) lacks some of %s: %s", keys(created), all);

        AclBindingFilter onTopic = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                AccessControlEntryFilter.ANY);
        Set<String> topicAcls = keys(admin.describeAcls(onTopic).values().get());
        JavaChecks.expect(topicAcls.equals(keys(created.subList(0, 2))), "ACLs on %s: %s", topic, topicAcls);

        AclBindingFilter matching = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.GROUP, prefix + "-app", PatternType.MATCH),
                AccessControlEntryFilter.ANY);
        Set<String> matched = keys(admin.describeAcls(matching).values().get());
        JavaChecks.expect(matched.equals(keys(created.subList(2, 3))), "MATCH group %s-app: %s", prefix, matched);

        AclBindingFilter readerOnly = new AclBindingFilter(ResourcePatternFilter.ANY,
                new AccessControlEntryFilter("User:reader", null, AclOperation.ANY, AclPermissionType.ANY));
        Collection<AclBinding> deleted = admin.deleteAcls(List.of(readerOnly)).all().get();
        Set<String> expectedDeleted = keys(List.of(created.get(0), created.get(2), created.get(4)));
        JavaChecks.expect(keys(deleted).containsAll(expectedDeleted), "deleteAcls(User:reader) deleted %s",
                keys(deleted));
        Set<String> left = keys(admin.describeAcls(AclBindingFilter.ANY).values().get());
        Set<String> stillThere = new HashSet<>(left);
        stillThere.retainAll(expectedDeleted);
        JavaChecks.expect(stillThere.isEmpty() && left.containsAll(keys(created.subList(1, 2))),
                "after deleting User:reader's ACLs: %s", left);
        admin.deleteAcls(List.of(created.get(1).toFilter(), created.get(3).toFilter())).all().get();
        return "5 ACLs (literal, prefixed, DENY, cluster, transactional id) created; described by ANY, by topic and "
                + "by MATCH; one principal's deleted";
    }

    static String createInvalid(Ctx ctx) throws Exception {
        AclBinding badCluster = allow(ResourceType.CLUSTER, "not-the-cluster", "User:x", AclOperation.ALTER);
        try {
            ctx.admin().createAcls(List.of(badCluster)).all().get();
            throw new JavaChecks.Failed("an ACL on cluster resource 'not-the-cluster' was accepted");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof InvalidRequestException, "a bad cluster name: %s", e.getCause());
        }
        return "an ACL on a cluster not named kafka-cluster: InvalidRequestException";
    }

    static String producer(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("acl-produce"), 1);
        Conn user = user(ctx);
        try (KafkaProducer<String, String> producer = user.producer("enable.idempotence", "false",
                "max.block.ms", "5000", "delivery.timeout.ms", "8000", "request.timeout.ms", "5000")) {
            producer.send(new ProducerRecord<>(topic, "denied")).get();
            throw new JavaChecks.Failed("a user without ACLs produced to " + topic);
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof TopicAuthorizationException, "without ACLs: %s", e.getCause());
        }
        AclBinding write = allow(ResourceType.TOPIC, topic, principal(ctx), AclOperation.WRITE);
        ctx.admin().createAcls(List.of(write)).all().get();
        try (KafkaProducer<String, String> producer = user.producer("enable.idempotence", "false")) {
            producer.send(new ProducerRecord<>(topic, "allowed")).get();
        }
        ctx.admin().deleteAcls(List.of(write.toFilter())).all().get();
        try (KafkaProducer<String, String> producer = user.producer("enable.idempotence", "false",
                "max.block.ms", "5000", "delivery.timeout.ms", "8000", "request.timeout.ms", "5000")) {
            producer.send(new ProducerRecord<>(topic, "denied again")).get();
            throw new JavaChecks.Failed("the user produced after its ACL was deleted");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof TopicAuthorizationException, "after deleteAcls: %s",
                    e.getCause());
        }
        return "TopicAuthorizationException without an ACL, written with WRITE, refused again once deleted";
    }

    static String idempotent(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("acl-idem"), 1);
        ctx.admin().createAcls(List.of(allow(ResourceType.TOPIC, topic, principal(ctx), AclOperation.WRITE)))
                .all().get();
        try (KafkaProducer<String, String> producer = user(ctx).producer("enable.idempotence", "true",
                "acks", "all")) {
            long offset = producer.send(new ProducerRecord<>(topic, "idempotent")).get().offset();
            return "an idempotent producer with only WRITE on the topic (no IDEMPOTENT_WRITE) wrote offset " + offset;
        }
    }

    static String consumerGroup(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("acl-consume"), 1);
        ConsumerChecks.produce(ctx.conn, topic, 3, "v");
        String group = Conn.unique("g-acl");
        ctx.admin().createAcls(List.of(allow(ResourceType.TOPIC, topic, principal(ctx), AclOperation.READ)))
                .all().get();
        Conn user = user(ctx);
        try (KafkaConsumer<String, String> consumer = user.consumer("group.id", group)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 15000;
            while (true) {
                JavaChecks.expect(System.currentTimeMillis() < deadline,
                        "no GroupAuthorizationException for a group without a READ ACL");
                consumer.poll(Duration.ofMillis(200));
            }
        } catch (GroupAuthorizationException e) {
            // expected: READ on the topic alone does not let the user join the group
        }
        ctx.admin().createAcls(List.of(allow(ResourceType.GROUP, group, principal(ctx), AclOperation.READ)))
                .all().get();
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = user.consumer("group.id", group)) {
            consumer.subscribe(List.of(topic));
            Conn.waitUntil(() -> seen.size() == 3,
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> seen.add(rec.value())), 20000,
                    () -> "3 records with READ on topic and group, have " + seen);
            consumer.commitSync();
        }
        return "GroupAuthorizationException without a group ACL; with READ on both, read and committed";
    }

    static String authorizedOperations(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("acl-ops"), 1);
        ctx.admin().createAcls(List.of(
                allow(ResourceType.TOPIC, topic, principal(ctx), AclOperation.READ),
                allow(ResourceType.TOPIC, topic, principal(ctx), AclOperation.DESCRIBE_CONFIGS))).all().get();
        try (Admin admin = user(ctx).admin()) {
            Set<AclOperation> ops = admin.describeTopics(List.of(topic),
                    new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get().get(topic)
                    .authorizedOperations();
            // READ implies DESCRIBE
            JavaChecks.expect(Set.of(AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)
                    .equals(ops), "the user's authorized operations on %s: %s", topic, ops);
            return "the user's operations on the topic: " + new TreeSet<>(ops);
        }
    }
}
