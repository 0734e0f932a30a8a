/**
 * Reserved for the security (ACLs, visibility labels, tokens) and snapshot
 * scenarios: Basalt does not implement them yet, so nothing runs here.
 */
package dev.basalt.compat.security;
