/**
 * HBase's access control (tag {@code security}) and Kerberos
 * authentication (tag {@code kerberos}) through its own client: run by
 * scripts/java-suite against a server configured for them, and skipped
 * elsewhere.
 */
package dev.basalt.compat.security;
