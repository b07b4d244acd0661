"""Kafka's security model: listeners' TLS and SASL, principals, ACLs and client quotas.

`broker_security.BrokerSecurity` (``broker.security``) ties it together. Modules
(each sans-I/O where it can be):
- `listener`: what each listener asks of its clients (protocol, TLS, SASL mechanisms,
  PLAIN users), from Kafka's keys; `session`: one connection's authentication state.
- `tls`: server SSLContexts from PEM or PKCS12 key and trust stores, reloaded on change;
  `principal_mapping`: ``ssl.principal.mapping.rules`` (a certificate's subject to a name).
- `mechanisms`, `plain`, `scram`, `oauthbearer`: server sides of SASL PLAIN,
  SCRAM-SHA-256/512 and OAUTHBEARER (unsecured JWTs); `jaas`: Kafka's
  ``sasl.jaas.config`` syntax.
- `credentials`: SCRAM credentials and their durable copy; `zk_users`: user and entity
  configs in ZooKeeper; `durable_file`: the single broker's small state files.
- `acls`, `authorizer`, `acl_store`, `acl_manager`: Kafka's ACL model, the authorizer's
  decision, and where ACLs are kept.
- `quota_config`, `quota_rate`, `quota_store`, `quotas`: client quotas and throttling.
"""
