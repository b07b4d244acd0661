import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/**
 * The Admin client against a single broker without an authorizer. The {@code admin.if_supported.*}
 * checks call Admin methods whose APIs a single ZooKeeper-era broker may leave out: they pass
 * when the call works or fails with UnsupportedVersionException (the detail says which), and
 * fail on anything else (a hang, a wrong error).
 */
final class AdminChecks {
    private AdminChecks() {}

    static void register(JavaChecks.Registry r, Ctx ctx) {
        r.add("admin.create_list_delete_topics", () -> topics(ctx));
        r.add("admin.describe_topics_with_ids", () -> describeTopics(ctx));
        r.add("admin.delete_topic_by_id", () -> deleteById(ctx));
        r.add("admin.create_partitions", () -> createPartitions(ctx));
        r.add("admin.describe_configs_topic", () -> describeTopicConfigs(ctx));
        r.add("admin.describe_configs_every_topic_config", () -> everyTopicConfig(ctx));
        r.add("admin.describe_configs_default_synonyms", () -> defaultSynonyms(ctx));
        r.add("admin.describe_configs_broker", () -> describeBrokerConfigs(ctx));
        r.add("admin.incremental_alter_configs", () -> incrementalAlter(ctx));
        r.add("admin.incremental_alter_configs_broker", () -> incrementalAlterBroker(ctx));
        r.add("admin.alter_configs_legacy", () -> legacyAlter(ctx));
        r.add("admin.list_offsets", () -> listOffsets(ctx));
        r.add("admin.delete_records", () -> deleteRecords(ctx));
        r.add("admin.describe_cluster", () -> describeCluster(ctx));
        r.add("admin.describe_log_dirs", () -> describeLogDirs(ctx));
        r.add("admin.describe_features", () -> describeFeatures(ctx));
        r.add("admin.consumer_groups", () -> consumerGroups(ctx));
        r.add("admin.consumer_group_kip848", () -> consumerProtocolGroup(ctx));
        r.add("admin.describe_producers", () -> describeProducers(ctx));
        r.add("admin.list_and_describe_transactions", () -> transactions(ctx));
        r.add("admin.abort_transaction", () -> abortTransaction(ctx));
        r.add("admin.fence_producers", () -> fenceProducers(ctx));
        r.add("admin.client_quotas", () -> clientQuotas(ctx));
        r.add("admin.scram_credentials", () -> scramCredentials(ctx));
        r.add("admin.acls_without_authorizer", () -> aclsWithoutAuthorizer(ctx));
        r.add("admin.elect_leaders", () -> electLeaders(ctx));
        ifSupported(r, ctx, "list_partition_reassignments", a -> a.listPartitionReassignments().reassignments());
        ifSupported(r, ctx, "alter_partition_reassignments", a -> a.alterPartitionReassignments(Map.of(
                new TopicPartition(scratch(ctx), 0), Optional.of(new NewPartitionReassignment(List.of(0)))))
                .all());
        ifSupported(r, ctx, "alter_replica_log_dirs", a -> a.alterReplicaLogDirs(Map.of(
                new TopicPartitionReplica(scratch(ctx), 0, 0), "/nonexistent")).all());
        ifSupported(r, ctx, "update_features", a -> a.updateFeatures(Map.of("metadata.version",
                new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions().validateOnly(true)).all());
        ifSupported(r, ctx, "describe_metadata_quorum", a -> a.describeMetadataQuorum().quorumInfo());
        ifSupported(r, ctx, "create_delegation_token",
                a -> a.createDelegationToken(new CreateDelegationTokenOptions()).delegationToken());
        ifSupported(r, ctx, "describe_delegation_token", a -> a.describeDelegationToken().delegationTokens());
        ifSupported(r, ctx, "unregister_broker", a -> a.unregisterBroker(99).all());
        ifSupported(r, ctx, "list_client_metrics_resources", a -> a.listClientMetricsResources().all());
    }

    /** An Admin call for {@code admin.if_supported.*}. */
    @FunctionalInterface
    interface Call {
        KafkaFuture<?> start(Admin admin) throws Exception;
    }

    private static void ifSupported(JavaChecks.Registry r, Ctx ctx, String name, Call call) {
        r.add("admin.if_supported." + name, () -> {
            try {
                Object result = call.start(ctx.admin()).get();
                return "supported: " + result;
            } catch (ExecutionException e) {
                if (e.getCause() instanceof UnsupportedVersionException) {
                    return "UNSUPPORTED_VERSION: " + e.getCause().getMessage();
                }
                throw e;
            }
        });
    }

    private static String scratchTopic;

    /** A one-partition topic the if_supported checks point at (made once). */
    private static synchronized String scratch(Ctx ctx) throws Exception {
        if (scratchTopic == null) {
            scratchTopic = ctx.conn.createTopic(Conn.unique("scratch"), 1);
        }
        return scratchTopic;
    }

    /**
     * A preferred election on a partition its only replica leads: Kafka answers
     * ELECTION_NOT_NEEDED for it (UNSUPPORTED_VERSION from a broker without ElectLeaders passes too).
     */
    static String electLeaders(Ctx ctx) throws Exception {
        TopicPartition tp = new TopicPartition(scratch(ctx), 0);
        Map<TopicPartition, Optional<Throwable>> result;
        try {
            result = ctx.admin().electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnsupportedVersionException) {
                return "UNSUPPORTED_VERSION: " + e.getCause().getMessage();
            }
            throw e;
        }
        Optional<Throwable> outcome = result.get(tp);
        JavaChecks.expect(outcome != null && outcome.isPresent() && outcome.get() instanceof ElectionNotNeededException,
                "preferred election on a single-replica partition: %s", result);
        return "preferred election: ElectionNotNeededException for " + tp;
    }

    static String topics(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String a = Conn.unique("admin-a");
        String b = Conn.unique("admin-b");
        CreateTopicsResult created = admin.createTopics(List.of(new NewTopic(a, 3, (short) 1),
                new NewTopic(b, Optional.empty(), Optional.empty())));
        created.all().get();
        JavaChecks.expect(created.numPartitions(a).get() == 3, "createTopics answered %d partitions for %s",
                created.numPartitions(a).get(), a);
        JavaChecks.expect(!Uuid.ZERO_UUID.equals(created.topicId(a).get()), "createTopics answered no topic id");
        try {
            admin.createTopics(List.of(new NewTopic(a, 1, (short) 1))).all().get();
            throw new JavaChecks.Failed("creating " + a + " twice succeeded");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException,
                    "creating a topic twice: %s", e.getCause());
        }
        Map<String, TopicListing> listed = admin.listTopics().namesToListings().get();
        JavaChecks.expect(listed.containsKey(a) && listed.containsKey(b), "listTopics lacks %s or %s", a, b);
        JavaChecks.expect(listed.get(a).topicId().equals(created.topicId(a).get()),
                "listTopics gives %s the id %s, createTopics %s", a, listed.get(a).topicId(), created.topicId(a).get());
        Set<String> internal = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get();
        admin.deleteTopics(List.of(a, b)).all().get();
        Set<String> after = new TreeSet<>();
        Conn.waitUntil(() -> {
            try {
                after.clear();
                after.addAll(admin.listTopics().names().get());
                return !after.contains(a) && !after.contains(b);
            } catch (Exception e) {
                return false;
            }
        }, () -> { }, 15000, () -> "the deleted topics to leave listTopics: " + after);
        try {
            admin.deleteTopics(List.of(a)).all().get();
            throw new JavaChecks.Failed("deleting " + a + " twice succeeded");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof UnknownTopicOrPartitionException,
                    "deleting a missing topic: %s", e.getCause());
        }
        String internals = internal.stream().filter(t -> t.startsWith("__")).sorted()
                .collect(Collectors.joining(","));
        return "created (3 partitions; broker default), listed with ids, deleted; internal topics listed: ["
                + internals + "]";
    }

    static String describeTopics(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("describe"), 3);
        TopicDescription byName = admin.describeTopics(List.of(topic),
                new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get().get(topic);
        JavaChecks.expect(byName.partitions().size() == 3, "%d partitions", byName.partitions().size());
        Uuid id = byName.topicId();
        JavaChecks.expect(id != null && !Uuid.ZERO_UUID.equals(id), "describeTopics gave topic id %s", id);
        for (TopicPartitionInfo p : byName.partitions()) {
            JavaChecks.expect(p.leader() != null && p.replicas().size() == 1 && p.isr().size() == 1,
                    "partition %d: leader %s replicas %s isr %s", p.partition(), p.leader(), p.replicas(), p.isr());
        }
        TopicDescription byId = admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds().get()
                .get(id);
        JavaChecks.expect(byId != null && topic.equals(byId.name()) && byId.partitions().size() == 3,
                "describeTopics(id %s) = %s", id, byId);
        try {
            admin.describeTopics(List.of(Conn.unique("missing"))).allTopicNames().get();
            throw new JavaChecks.Failed("describing a missing topic succeeded");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof UnknownTopicOrPartitionException,
                    "describing a missing topic: %s", e.getCause());
        }
        return "3 partitions with leaders, id " + id + " (the same by id); authorized operations "
                + byName.authorizedOperations();
    }

    static String deleteById(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = Conn.unique("delete-id");
        Uuid id = admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).topicId(topic).get();
        admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all().get();
        Conn.waitUntil(() -> {
            try {
                return !admin.listTopics().names().get().contains(topic);
            } catch (Exception e) {
                return false;
            }
        }, () -> { }, 15000, () -> topic + " to leave listTopics");
        return "deleted " + topic + " by its id " + id;
    }

    static String createPartitions(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("grow"), 2);
        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get();
        int n = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        JavaChecks.expect(n == 5, "after increaseTo(5): %d partitions", n);
        try {
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            throw new JavaChecks.Failed("shrinking to 3 partitions succeeded");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof org.apache.kafka.common.errors.InvalidPartitionsException,
                    "shrinking: %s", e.getCause());
        }
        try (KafkaProducer<String, String> producer = ctx.conn.producer()) {
            producer.send(new ProducerRecord<>(topic, 4, null, "in the new partition")).get();
        }
        return "2 -> 5 partitions (written to the 5th); shrinking refused with InvalidPartitionsException";
    }

    private static Config describe(Admin admin, ConfigResource resource, DescribeConfigsOptions options)
            throws Exception {
        return admin.describeConfigs(List.of(resource), options).all().get().get(resource);
    }

    static String describeTopicConfigs(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("configs"), 1, "retention.ms", "123456");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = describe(ctx.admin(), resource,
                new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true));
        ConfigEntry retention = config.get("retention.ms");
        JavaChecks.expect(retention != null && "123456".equals(retention.value())
                && retention.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                "retention.ms = %s", retention);
        ConfigEntry cleanup = config.get("cleanup.policy");
        JavaChecks.expect(cleanup != null && "delete".equals(cleanup.value()) && cleanup.isDefault(),
                "cleanup.policy = %s", cleanup);
        ConfigEntry maxBytes = config.get("max.message.bytes");
        JavaChecks.expect(maxBytes != null && maxBytes.type() == ConfigEntry.ConfigType.INT,
                "max.message.bytes = %s", maxBytes);
        return config.entries().size() + " entries; retention.ms=123456 (" + retention.source()
                + ", synonyms " + retention.synonyms().size() + "), cleanup.policy=delete (default)";
    }

    /** The topic config names Kafka's client knows (TopicConfig's *_CONFIG constants). */
    static Set<String> kafkaTopicConfigNames() throws Exception {
        Set<String> names = new TreeSet<>();
        for (java.lang.reflect.Field f : org.apache.kafka.common.config.TopicConfig.class.getFields()) {
            if (f.getName().endsWith("_CONFIG") && f.getType() == String.class
                    && java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
                names.add((String) f.get(null));
            }
        }
        return names;
    }

    /** A Kafka broker describes every topic config (default or not); tools list them all. */
    static String everyTopicConfig(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("all-configs"), 1);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Set<String> described = describe(ctx.admin(), resource, new DescribeConfigsOptions()).entries().stream()
                .map(ConfigEntry::name).collect(Collectors.toCollection(TreeSet::new));
        Set<String> missing = kafkaTopicConfigNames();
        missing.removeAll(described);
        JavaChecks.expect(missing.isEmpty(), "DescribeConfigs of a topic leaves out %d of Kafka's topic configs: %s",
                missing.size(), missing);
        return described.size() + " topic configs described, every TopicConfig name among them";
    }

    /**
     * With synonyms asked for, Kafka lists the broker settings and defaults a topic config falls
     * back to, from its primary broker key on (ConfigHelper.configSynonyms): cleanup.policy (not
     * overridden) has log.cleanup.policy=delete (DEFAULT_CONFIG); an overridden retention.ms has
     * only the override, its primary log.retention.ms being unset and null by default.
     */
    static String defaultSynonyms(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("synonyms"), 1, "retention.ms", "123456");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = describe(ctx.admin(), resource, new DescribeConfigsOptions().includeSynonyms(true));
        List<String> cleanup = config.get("cleanup.policy").synonyms().stream()
                .map(s -> s.name() + "=" + s.value() + "/" + s.source()).collect(Collectors.toList());
        List<String> retention = config.get("retention.ms").synonyms().stream()
                .map(s -> s.name() + "=" + s.value() + "/" + s.source()).collect(Collectors.toList());
        JavaChecks.expect(cleanup.equals(List.of("log.cleanup.policy=delete/DEFAULT_CONFIG")),
                "cleanup.policy synonyms %s, Kafka answers [log.cleanup.policy=delete/DEFAULT_CONFIG]", cleanup);
        JavaChecks.expect(retention.equals(List.of("retention.ms=123456/DYNAMIC_TOPIC_CONFIG")),
                "retention.ms synonyms %s, Kafka answers [retention.ms=123456/DYNAMIC_TOPIC_CONFIG]", retention);
        return "cleanup.policy " + cleanup + "; retention.ms " + retention;
    }

    static String describeBrokerConfigs(Ctx ctx) throws Exception {
        Node node = ctx.admin().describeCluster().nodes().get().iterator().next();
        ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
        Config config = describe(ctx.admin(), resource, new DescribeConfigsOptions());
        JavaChecks.expect(!config.entries().isEmpty(), "no broker configs");
        ConfigEntry maxBytes = config.get("message.max.bytes");
        JavaChecks.expect(maxBytes != null && maxBytes.value() != null, "message.max.bytes = %s", maxBytes);
        return config.entries().size() + " broker entries; message.max.bytes=" + maxBytes.value();
    }

    static String incrementalAlter(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("alter"), 1);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete,compact"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET))))
                .all().get();
        Config config = describe(admin, resource, new DescribeConfigsOptions());
        String policy = config.get("cleanup.policy").value();
        JavaChecks.expect("delete,compact".equals(policy),
                "cleanup.policy set to \"delete,compact\" describes as \"%s\"", policy);
        JavaChecks.expect("3600000".equals(config.get("retention.ms").value()), "retention.ms = %s",
                config.get("retention.ms").value());
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT),
                new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE))))
                .all().get();
        config = describe(admin, resource, new DescribeConfigsOptions());
        String subtracted = config.get("cleanup.policy").value();
        ConfigEntry retention = config.get("retention.ms");
        JavaChecks.expect("delete".equals(subtracted), "after SUBTRACT compact: cleanup.policy = \"%s\"", subtracted);
        JavaChecks.expect(retention.isDefault() && "604800000".equals(retention.value()),
                "after DELETE retention.ms = %s", retention);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                .all().get();
        String appended = describe(admin, resource, new DescribeConfigsOptions()).get("cleanup.policy").value();
        JavaChecks.expect("delete,compact".equals(appended), "after APPEND compact: cleanup.policy = \"%s\"",
                appended);
        try {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET))))
                    .all().get();
            throw new JavaChecks.Failed("retention.ms=soon was accepted");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof org.apache.kafka.common.errors.InvalidConfigurationException
                    || e.getCause() instanceof org.apache.kafka.common.errors.InvalidRequestException,
                    "an invalid value: %s", e.getCause());
        }
        return "SET delete,compact reads back exactly; SUBTRACT, DELETE, APPEND work; a bad value is refused";
    }

    private static void alter(Admin admin, ConfigResource resource, String key, String value) throws Exception {
        AlterConfigOp.OpType op = value == null ? AlterConfigOp.OpType.DELETE : AlterConfigOp.OpType.SET;
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(new ConfigEntry(key, value), op))))
                .all().get();
    }

    private static List<String> synonyms(ConfigEntry entry) {
        return entry.synonyms().stream().map(s -> s.name() + "=" + s.value() + "/" + s.source())
                .collect(Collectors.toList());
    }

    /**
     * Dynamic broker configs as a ZooKeeper-mode Kafka takes them from the Admin client: this
     * broker's own value (resource name = its id) wins over the cluster default (name ""), each
     * described with its source and synonyms; a static key is refused with InvalidRequestException
     * and Kafka's message; a logger's level changes through BROKER_LOGGER and DELETE gives it its
     * parent's again. Everything is put back afterwards.
     */
    static String incrementalAlterBroker(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        Node node = admin.describeCluster().nodes().get().iterator().next();
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
        ConfigResource defaults = new ConfigResource(ConfigResource.Type.BROKER, "");
        ConfigResource logger = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, node.idString());
        DescribeConfigsOptions withSynonyms = new DescribeConfigsOptions().includeSynonyms(true);
        try {
            alter(admin, defaults, "log.retention.ms", "7200000");
            alter(admin, broker, "log.retention.ms", "3600000");
            ConfigEntry own = describe(admin, broker, withSynonyms).get("log.retention.ms");
            JavaChecks.expect("3600000".equals(own.value())
                    && own.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG && !own.isReadOnly(),
                    "broker's log.retention.ms = %s", own);
            List<String> expected = List.of("log.retention.ms=3600000/DYNAMIC_BROKER_CONFIG",
                    "log.retention.ms=7200000/DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.hours=168/DEFAULT_CONFIG");
            JavaChecks.expect(synonyms(own).equals(expected), "synonyms %s, Kafka answers %s", synonyms(own), expected);
            ConfigEntry cluster = describe(admin, defaults, withSynonyms).get("log.retention.ms");
            JavaChecks.expect(cluster != null && "7200000".equals(cluster.value())
                    && cluster.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                    "cluster default log.retention.ms = %s", cluster);
            try {
                alter(admin, broker, "log.retention.hours", "1");
                throw new JavaChecks.Failed("log.retention.hours was changed dynamically");
            } catch (ExecutionException e) {
                JavaChecks.expect(e.getCause() instanceof org.apache.kafka.common.errors.InvalidRequestException
                        && "Cannot update these configs dynamically: Set(log.retention.hours)"
                                .equals(e.getCause().getMessage()),
                        "a static key: %s", e.getCause());
            }
            alter(admin, logger, "minikafka.produce", "DEBUG");
            Config levels = describe(admin, logger, new DescribeConfigsOptions());
            JavaChecks.expect("DEBUG".equals(levels.get("minikafka.produce").value())
                    && levels.get("minikafka.produce").source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                    "minikafka.produce = %s", levels.get("minikafka.produce"));
            alter(admin, logger, "minikafka.produce", null);
            levels = describe(admin, logger, new DescribeConfigsOptions());
            JavaChecks.expect(levels.get("minikafka.produce").value().equals(levels.get("root").value()),
                    "after DELETE minikafka.produce = %s, root = %s", levels.get("minikafka.produce"), levels.get("root"));
            return "own 3600000 over default 7200000 (" + String.join(", ", synonyms(own))
                    + "); log.retention.hours refused; a logger's level set and reset";
        } finally {
            alter(admin, broker, "log.retention.ms", null);
            alter(admin, defaults, "log.retention.ms", null);
        }
    }

    @SuppressWarnings("deprecation")
    static String legacyAlter(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("legacy"), 1, "retention.ms", "1000000");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.alterConfigs(Map.of(resource, new Config(List.of(new ConfigEntry("segment.ms", "7200000")))))
                .all().get();
        Config config = describe(admin, resource, new DescribeConfigsOptions());
        JavaChecks.expect("7200000".equals(config.get("segment.ms").value()), "segment.ms = %s",
                config.get("segment.ms").value());
        // AlterConfigs replaces the whole set: retention.ms goes back to its default
        JavaChecks.expect(config.get("retention.ms").isDefault(), "retention.ms after a full replace: %s",
                config.get("retention.ms"));
        return "alterConfigs replaced the topic's configs (segment.ms set, retention.ms back to default)";
    }

    static String listOffsets(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("list-offsets"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 100_000;
        try (KafkaProducer<String, String> producer = ctx.conn.producer()) {
            for (int i = 0; i < 10; i++) {
                long ts = i == 5 ? base + 50_000 : base + i * 1000L; // record 5 has the largest timestamp
                producer.send(new ProducerRecord<>(topic, 0, ts, null, "v" + i));
            }
            producer.flush();
        }
        Admin admin = ctx.admin();
        Map<String, OffsetSpec> specs = new TreeMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        specs.put("latest", OffsetSpec.latest());
        specs.put("forTimestamp", OffsetSpec.forTimestamp(base + 2500));
        specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
        specs.put("earliestLocal", OffsetSpec.earliestLocal());
        specs.put("latestTiered", OffsetSpec.latestTiered());
        Map<String, String> got = new TreeMap<>();
        Map<String, ListOffsetsResultInfo> info = new HashMap<>();
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
            ListOffsetsResultInfo r = admin.listOffsets(Map.of(tp, e.getValue()),
                    new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).partitionResult(tp).get();
            info.put(e.getKey(), r);
            got.put(e.getKey(), r.offset() + "@" + r.timestamp());
        }
        JavaChecks.expect(info.get("earliest").offset() == 0, "earliest: %s", got);
        JavaChecks.expect(info.get("latest").offset() == 10, "latest: %s", got);
        JavaChecks.expect(info.get("forTimestamp").offset() == 3, "forTimestamp(t2.5) should be offset 3: %s", got);
        ListOffsetsResultInfo max = info.get("maxTimestamp");
        JavaChecks.expect(max.offset() == 5 && max.timestamp() == base + 50_000,
                "maxTimestamp should be offset 5 at %d: %s", base + 50_000, got);
        JavaChecks.expect(info.get("earliestLocal").offset() == 0, "earliestLocal (no tiered storage): %s", got);
        JavaChecks.expect(info.get("latestTiered").offset() == -1, "latestTiered (no tiered storage): %s", got);
        long committed = admin.listOffsets(Map.of(tp, OffsetSpec.latest()),
                new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(tp).get().offset();
        JavaChecks.expect(committed == 10, "latest under READ_COMMITTED: %d", committed);
        return "offset@timestamp " + got.toString().replace(Long.toString(base), "base");
    }

    static String deleteRecords(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("delete-records"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        ConsumerChecks.produce(ctx.conn, topic, 20, "v");
        Admin admin = ctx.admin();
        long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(12))).lowWatermarks().get(tp).get()
                .lowWatermark();
        JavaChecks.expect(low == 12, "deleteRecords(before 12) answered low watermark %d", low);
        long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset();
        JavaChecks.expect(earliest == 12, "earliest offset after deleteRecords: %d", earliest);
        List<Long> offsets = ctx.conn.readToEnd(topic, "read_uncommitted", 20000).stream()
                .map(rec -> rec.offset()).collect(Collectors.toList());
        JavaChecks.expect(offsets.size() == 8 && offsets.get(0) == 12, "read from the beginning: %s", offsets);
        long all = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp).get()
                .lowWatermark();
        JavaChecks.expect(all == 20, "deleteRecords(before -1 = high watermark) answered %d", all);
        try {
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(25))).all().get();
            throw new JavaChecks.Failed("deleting beyond the high watermark succeeded");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof org.apache.kafka.common.errors.OffsetOutOfRangeException,
                    "deleting beyond the high watermark: %s", e.getCause());
        }
        return "low watermark 12, reads start there; -1 deletes up to 20; 25 is OffsetOutOfRange";
    }

    static String describeCluster(Ctx ctx) throws Exception {
        DescribeClusterResult cluster = ctx.admin().describeCluster(
                new DescribeClusterOptions().includeAuthorizedOperations(true));
        String id = cluster.clusterId().get();
        Collection<Node> nodes = cluster.nodes().get();
        Node controller = cluster.controller().get();
        JavaChecks.expect(id != null && !id.isEmpty(), "cluster id %s", id);
        JavaChecks.expect(nodes.size() == 1, "nodes %s", nodes);
        Node node = nodes.iterator().next();
        String bootstrap = ctx.option("bootstrap");
        JavaChecks.expect(bootstrap.equals(node.host() + ":" + node.port()), "node %s, bootstrap %s", node, bootstrap);
        JavaChecks.expect(controller != null && controller.id() == node.id(), "controller %s", controller);
        Set<?> ops = cluster.authorizedOperations().get();
        JavaChecks.expect(ops != null && !ops.isEmpty(), "authorized operations %s", ops);
        return "cluster " + id + ", node " + node + ", controller " + controller.id() + ", operations " + ops;
    }

    static String describeLogDirs(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("log-dirs"), 1);
        ConsumerChecks.produce(ctx.conn, topic, 10, "v");
        Admin admin = ctx.admin();
        int nodeId = admin.describeCluster().nodes().get().iterator().next().id();
        Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(nodeId)).allDescriptions().get()
                .get(nodeId);
        JavaChecks.expect(dirs != null && dirs.size() == 1, "log dirs %s", dirs);
        Map.Entry<String, LogDirDescription> dir = dirs.entrySet().iterator().next();
        TopicPartition tp = new TopicPartition(topic, 0);
        JavaChecks.expect(dir.getValue().error() == null, "log dir error %s", dir.getValue().error());
        JavaChecks.expect(dir.getValue().replicaInfos().containsKey(tp)
                && dir.getValue().replicaInfos().get(tp).size() > 0, "%s not listed with a size: %s", tp,
                dir.getValue().replicaInfos().get(tp));
        JavaChecks.expect(dir.getValue().totalBytes().isPresent() && dir.getValue().usableBytes().isPresent(),
                "total/usable bytes missing: %s / %s", dir.getValue().totalBytes(), dir.getValue().usableBytes());
        TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, nodeId);
        ReplicaLogDirInfo where = admin.describeReplicaLogDirs(List.of(replica)).all().get().get(replica);
        JavaChecks.expect(where != null && dir.getKey().equals(where.getCurrentReplicaLogDir()),
                "describeReplicaLogDirs: %s, describeLogDirs: %s", where, dir.getKey());
        return "one log dir " + dir.getKey() + " listing " + tp + " (" + dir.getValue().replicaInfos().get(tp).size()
                + " bytes); describeReplicaLogDirs agrees";
    }

    static String describeFeatures(Ctx ctx) throws Exception {
        FeatureMetadata features = ctx.admin().describeFeatures().featureMetadata().get();
        return "supported " + features.supportedFeatures() + ", finalized " + features.finalizedFeatures()
                + ", epoch " + features.finalizedFeaturesEpoch();
    }

    private static Map<TopicPartition, Long> groupOffsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, Long> out = new TreeMap<>((x, y) -> x.toString().compareTo(y.toString()));
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e
                : admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet()) {
            if (e.getValue() != null) {
                out.put(e.getKey(), e.getValue().offset());
            }
        }
        return out;
    }

    private static Optional<ConsumerGroupListing> listed(Admin admin, String group, ListConsumerGroupsOptions options)
            throws Exception {
        return admin.listConsumerGroups(options).all().get().stream().filter(g -> g.groupId().equals(group))
                .findFirst();
    }

    static String consumerGroups(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("admin-groups"), 2);
        ConsumerChecks.produce(ctx.conn, topic, 10, "v");
        String group = Conn.unique("g-admin");
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        KafkaConsumer<String, String> consumer = ctx.conn.consumer("group.id", group, "heartbeat.interval.ms", "500");
        List<String> steps = new ArrayList<>();
        try {
            consumer.subscribe(List.of(topic));
            Set<String> seen = new java.util.HashSet<>();
            Conn.waitUntil(() -> seen.size() == 10,
                    () -> consumer.poll(Duration.ofMillis(200)).forEach(rec -> seen.add(rec.value())), 30000,
                    () -> "10 records, have " + seen.size());
            consumer.commitSync();

            Optional<ConsumerGroupListing> listing = listed(admin, group, new ListConsumerGroupsOptions());
            JavaChecks.expect(listing.isPresent(), "listConsumerGroups does not list %s", group);
            JavaChecks.expect(listing.get().state().equals(Optional.of(ConsumerGroupState.STABLE)),
                    "listed state %s", listing.get().state());
            Optional<ConsumerGroupListing> classic = listed(admin, group,
                    new ListConsumerGroupsOptions().withTypes(Set.of(GroupType.CLASSIC)));
            JavaChecks.expect(classic.isPresent(), "listConsumerGroups(types=CLASSIC) does not list %s", group);
            Optional<ConsumerGroupListing> empty = listed(admin, group,
                    new ListConsumerGroupsOptions().inStates(Set.of(ConsumerGroupState.EMPTY)));
            JavaChecks.expect(empty.isEmpty(), "listConsumerGroups(states=EMPTY) lists the stable %s", group);
            steps.add("listed STABLE/CLASSIC");

            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)
                    .get();
            JavaChecks.expect(d.state() == ConsumerGroupState.STABLE && d.members().size() == 1,
                    "described state %s with %d members", d.state(), d.members().size());
            MemberDescription member = d.members().iterator().next();
            JavaChecks.expect(member.assignment().topicPartitions().equals(Set.of(p0, p1)),
                    "the member's assignment %s", member.assignment().topicPartitions());
            JavaChecks.expect(d.type() == GroupType.CLASSIC && "range".equals(d.partitionAssignor()),
                    "type %s, assignor %s", d.type(), d.partitionAssignor());
            steps.add("described (1 member, range)");

            Map<TopicPartition, Long> offsets = groupOffsets(admin, group);
            long sum = offsets.values().stream().mapToLong(Long::longValue).sum();
            JavaChecks.expect(offsets.keySet().equals(Set.of(p0, p1)) && sum == 10, "group offsets %s", offsets);
            String unknown = Conn.unique("g-never");
            Map<String, Map<TopicPartition, OffsetAndMetadata>> batched = admin.listConsumerGroupOffsets(Map.of(
                    group, new ListConsumerGroupOffsetsSpec(), unknown, new ListConsumerGroupOffsetsSpec()))
                    .all().get();
            JavaChecks.expect(batched.get(group).size() == 2 && batched.get(unknown).isEmpty(),
                    "offsets of two groups in one call: %s", batched);
            steps.add("offsets " + offsets.values() + " (also in one call with an unknown group)");

            try {
                admin.deleteConsumerGroups(List.of(group)).all().get();
                throw new JavaChecks.Failed("deleting a group with a live member succeeded");
            } catch (ExecutionException e) {
                JavaChecks.expect(e.getCause() instanceof GroupNotEmptyException,
                        "deleting a group with a member: %s", e.getCause());
            }
            steps.add("delete refused (GroupNotEmpty)");

            admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions()).all().get();
            ConsumerGroupDescription afterRemove = admin.describeConsumerGroups(List.of(group)).describedGroups()
                    .get(group).get();
            JavaChecks.expect(afterRemove.members().isEmpty(), "members after removeMembersFromConsumerGroup: %s",
                    afterRemove.members());
            steps.add("member removed (" + afterRemove.state() + ")");
        } finally {
            consumer.close(Duration.ofSeconds(5));
        }

        admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(1), p1, new OffsetAndMetadata(2)))
                .all().get();
        Map<TopicPartition, Long> altered = groupOffsets(admin, group);
        JavaChecks.expect(altered.equals(Map.of(p0, 1L, p1, 2L)), "after alterConsumerGroupOffsets: %s", altered);
        steps.add("offsets altered");

        admin.deleteConsumerGroupOffsets(group, Set.of(p1)).all().get();
        Map<TopicPartition, Long> remaining = groupOffsets(admin, group);
        JavaChecks.expect(remaining.equals(Map.of(p0, 1L)), "after deleteConsumerGroupOffsets(p1): %s", remaining);
        steps.add("p1's offset deleted");

        admin.deleteConsumerGroups(List.of(group)).all().get();
        JavaChecks.expect(listed(admin, group, new ListConsumerGroupsOptions()).isEmpty(),
                "the deleted group is still listed");
        try {
            ConsumerGroupDescription gone = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)
                    .get();
            JavaChecks.expect(gone.state() == ConsumerGroupState.DEAD, "the deleted group describes as %s",
                    gone.state());
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof GroupIdNotFoundException, "describing the deleted group: %s",
                    e.getCause());
        }
        steps.add("group deleted");
        return String.join("; ", steps);
    }

    static String consumerProtocolGroup(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("admin-kip848"), 3);
        String group = Conn.unique("g-admin-kip848");
        try (KafkaConsumer<String, String> consumer = ctx.conn.consumer("group.id", group,
                "group.protocol", "consumer")) {
            consumer.subscribe(List.of(topic));
            Conn.waitUntil(() -> consumer.assignment().size() == 3, () -> consumer.poll(Duration.ofMillis(100)),
                    30000, () -> "3 partitions, have " + consumer.assignment());
            Optional<ConsumerGroupListing> listing = listed(admin, group,
                    new ListConsumerGroupsOptions().withTypes(Set.of(GroupType.CONSUMER)));
            JavaChecks.expect(listing.isPresent(), "listConsumerGroups(types=CONSUMER) does not list %s", group);
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)
                    .get();
            JavaChecks.expect(d.type() == GroupType.CONSUMER, "type %s", d.type());
            JavaChecks.expect(d.members().size() == 1
                    && d.members().iterator().next().assignment().topicPartitions().size() == 3,
                    "members %s", d.members());
            return "listed as CONSUMER; described: state " + d.state() + ", assignor " + d.partitionAssignor()
                    + ", 1 member with 3 partitions";
        }
    }

    static String describeProducers(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("producers"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = ctx.conn.producer("enable.idempotence", "true")) {
            for (int i = 0; i < 7; i++) {
                producer.send(new ProducerRecord<>(topic, "v" + i)).get();
            }
        }
        List<ProducerState> active = ctx.admin().describeProducers(List.of(tp)).partitionResult(tp).get()
                .activeProducers();
        JavaChecks.expect(active.size() == 1, "active producers %s", active);
        ProducerState state = active.get(0);
        JavaChecks.expect(state.producerId() >= 0 && state.lastSequence() == 6
                && state.currentTransactionStartOffset().isEmpty(), "producer state %s", state);
        return "one idempotent producer: id " + state.producerId() + ", epoch " + state.producerEpoch()
                + ", last sequence 6";
    }

    static String transactions(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("admin-txn"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        String id = Conn.unique("tx-admin");
        try (KafkaProducer<String, String> producer = TransactionChecks.transactional(ctx.conn, id)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "open")).get();
            Collection<TransactionListing> all = admin.listTransactions().all().get();
            Optional<TransactionListing> mine = all.stream().filter(t -> t.transactionalId().equals(id)).findFirst();
            JavaChecks.expect(mine.isPresent() && mine.get().state() == TransactionState.ONGOING,
                    "listTransactions: %s", mine);
            Collection<TransactionListing> ongoing = admin.listTransactions(
                    new org.apache.kafka.clients.admin.ListTransactionsOptions()
                            .filterStates(List.of(TransactionState.ONGOING))).all().get();
            JavaChecks.expect(ongoing.stream().anyMatch(t -> t.transactionalId().equals(id)),
                    "listTransactions(ONGOING) lacks %s", id);
            Collection<TransactionListing> longRunning = admin.listTransactions(
                    new org.apache.kafka.clients.admin.ListTransactionsOptions().filterOnDuration(3_600_000))
                    .all().get();
            JavaChecks.expect(longRunning.stream().noneMatch(t -> t.transactionalId().equals(id)),
                    "listTransactions(running over an hour) lists %s", id);
            TransactionDescription d = admin.describeTransactions(List.of(id)).description(id).get();
            JavaChecks.expect(d.state() == TransactionState.ONGOING && d.topicPartitions().equals(Set.of(tp))
                    && d.transactionTimeoutMs() == 30000 && d.transactionStartTimeMs().isPresent(),
                    "describeTransactions (open): %s", d);
            List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp).get()
                    .activeProducers();
            JavaChecks.expect(producers.size() == 1 && producers.get(0).currentTransactionStartOffset().isPresent()
                    && producers.get(0).producerId() == d.producerId(),
                    "describeProducers during the transaction: %s", producers);
            producer.commitTransaction();
            // EndTxn is answered once PrepareCommit is logged; the markers follow, then CompleteCommit.
            TransactionState[] state = {null};
            Conn.waitUntil(() -> state[0] == TransactionState.COMPLETE_COMMIT, () -> {
                try {
                    state[0] = admin.describeTransactions(List.of(id)).description(id).get().state();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, 10000, () -> "CompleteCommit after the commit, state " + state[0]);
            return "ONGOING listed (by state, not among those over an hour old) and described (partition, "
                    + "timeout, start time), then COMPLETE_COMMIT";
        }
    }

    static String abortTransaction(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String topic = ctx.conn.createTopic(Conn.unique("admin-abort"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        KafkaProducer<String, String> producer = TransactionChecks.transactional(ctx.conn, Conn.unique("tx-hanging"));
        try {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "hanging")).get();
            ProducerState state = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers()
                    .get(0);
            long lso = admin.listOffsets(Map.of(tp, OffsetSpec.latest()),
                    new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(tp).get().offset();
            JavaChecks.expect(lso == 0, "the open transaction's LSO is %d", lso);
            // A producer's first transaction has no coordinator epoch yet (no marker written):
            // kafka-transactions.sh then sends 0, as here.
            admin.abortTransaction(new AbortTransactionSpec(tp, state.producerId(), (short) state.producerEpoch(),
                    state.coordinatorEpoch().orElse(0))).all().get();
            long after = admin.listOffsets(Map.of(tp, OffsetSpec.latest()),
                    new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(tp).get().offset();
            JavaChecks.expect(after == 2, "LSO after abortTransaction: %d (expected 2: record and marker)", after);
            List<String> committed = Conn.values(ctx.conn.readToEnd(topic, "read_committed", 20000));
            JavaChecks.expect(committed.isEmpty(), "read_committed read %s", committed);
            return "the hanging transaction's partition was aborted by WriteTxnMarkers (LSO 0 -> 2)";
        } finally {
            producer.close(Duration.ofSeconds(2));
        }
    }

    static String fenceProducers(Ctx ctx) throws Exception {
        String topic = ctx.conn.createTopic(Conn.unique("admin-fence"), 1);
        String id = Conn.unique("tx-fenced");
        KafkaProducer<String, String> producer = TransactionChecks.transactional(ctx.conn, id);
        try {
            producer.initTransactions();
            ctx.admin().fenceProducers(List.of(id)).all().get();
            try {
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, "after fencing"));
                producer.commitTransaction();
                throw new JavaChecks.Failed("the producer committed after fenceProducers");
            } catch (ProducerFencedException e) {
                return "the producer got ProducerFencedException";
            } catch (KafkaException e) {
                JavaChecks.expect(e.getCause() instanceof ProducerFencedException,
                        "the fenced producer got %s", JavaChecks.describe(e));
                return "the producer got " + e.getClass().getSimpleName() + " <- ProducerFencedException";
            }
        } finally {
            producer.close(Duration.ofSeconds(2));
        }
    }

    static String clientQuotas(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String user = Conn.unique("quota-user");
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user));
        ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user)));
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                new ClientQuotaAlteration.Op("consumer_byte_rate", 2097152.0))))).all().get();
        Map<ClientQuotaEntity, Map<String, Double>> got = admin.describeClientQuotas(filter).entities().get();
        JavaChecks.expect(got.equals(Map.of(entity, Map.of("producer_byte_rate", 1048576.0,
                "consumer_byte_rate", 2097152.0))), "describeClientQuotas: %s", got);
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all().get();
        Map<ClientQuotaEntity, Map<String, Double>> after = admin.describeClientQuotas(filter).entities().get();
        JavaChecks.expect(after.equals(Map.of(entity, Map.of("consumer_byte_rate", 2097152.0))),
                "after removing producer_byte_rate: %s", after);
        return "set two quotas for a user, described them, removed one";
    }

    static String scramCredentials(Ctx ctx) throws Exception {
        Admin admin = ctx.admin();
        String user = Conn.unique("scram-user");
        admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                        "java-secret"),
                new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                        "java-secret"))).all().get();
        UserScramCredentialsDescription d = admin.describeUserScramCredentials(List.of(user)).description(user).get();
        Set<String> infos = d.credentialInfos().stream().map(i -> i.mechanism() + "/" + i.iterations())
                .collect(Collectors.toCollection(TreeSet::new));
        JavaChecks.expect(infos.equals(Set.of("SCRAM_SHA_512/8192", "SCRAM_SHA_256/4096")), "described %s", infos);
        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)))
                .all().get();
        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)))
                .all().get();
        try {
            admin.describeUserScramCredentials(List.of(user)).description(user).get();
            throw new JavaChecks.Failed("the deleted user still describes");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof ResourceNotFoundException, "describing the deleted user: %s",
                    e.getCause());
        }
        return "upserted " + infos + ", described them, deleted both";
    }

    static String aclsWithoutAuthorizer(Ctx ctx) throws Exception {
        try {
            ctx.admin().describeAcls(AclBindingFilter.ANY).values().get();
            throw new JavaChecks.Failed("describeAcls without an authorizer succeeded");
        } catch (ExecutionException e) {
            JavaChecks.expect(e.getCause() instanceof SecurityDisabledException, "describeAcls: %s", e.getCause());
            return "describeAcls: SecurityDisabledException";
        }
    }
}
