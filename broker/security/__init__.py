"""Kafka's security model: listeners' TLS and SASL, principals, ACLs and client quotas.

Modules (each sans-I/O where it can be):
- `tls`: server SSLContexts from PEM key and trust stores, reloaded on change.
- `principal_mapping`: `ssl.principal.mapping.rules` (a certificate's subject to a user name).
- `mechanisms`, `plain`, `scram`: server sides of SASL PLAIN and SCRAM-SHA-256/512.
- `jaas`: Kafka's `sasl.jaas.config` syntax.
- `acls`: Kafka's ACL model and the authorizer's decision.
"""
