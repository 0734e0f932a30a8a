/**
 * HBase's access control through its own client (tag {@code security}):
 * run by scripts/java-suite against a server with access control on, and
 * skipped elsewhere.
 */
package dev.basalt.compat.security;
