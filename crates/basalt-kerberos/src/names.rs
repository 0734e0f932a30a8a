//! Kerberos principal names and Hadoop's `auth_to_local` rules, which turn
//! an authenticated principal (`alice@REALM`, `hbase/host@REALM`) into the
//! short user name grants are made to (`alice`, `hbase`).
//!
//! The rule language is Hadoop's (`hadoop.security.auth_to_local`,
//! `KerberosName`), so a rule set copied from an HBase cluster's
//! `core-site.xml` maps names the same way here:
//!
//! - `DEFAULT`: a principal of the default realm maps to its first
//!   component (`alice@R` and `alice/admin@R` are both `alice`).
//! - `RULE:[n:fmt](regex)s/pattern/replacement/g` then optionally `/L`:
//!   applies to principals of `n` components (not counting the realm);
//!   `fmt` builds a string from `$0` (the realm), `$1`, `$2` (the
//!   components); the rule matches when `regex` matches that whole
//!   string, and the sed-like substitution (every match with `g`, the
//!   first otherwise) gives the short name; `/L` lower-cases it.
//!
//! Rules are tried in order and the first that matches wins. As with
//! Hadoop 3's default mechanism, a principal no rule maps is refused
//! rather than used whole, and a result still holding `@` or `/` is
//! refused.

use regex::Regex;

use crate::KerberosError;

/// A principal split into its parts: `service[/host][@realm]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosName {
    /// The first component (the user, or the service of a service
    /// principal).
    pub service: String,
    /// The second component, if any (a host, or an instance such as
    /// `admin`).
    pub host: Option<String>,
    /// The realm, if named.
    pub realm: Option<String>,
}

impl KerberosName {
    /// Splits `principal`. Refused: an empty first component, more than
    /// two components, or an empty part after `/` or `@`.
    pub fn parse(principal: &str) -> Result<KerberosName, KerberosError> {
        let bad = |why: &str| KerberosError::Name(format!("principal {principal:?}: {why}"));
        let (names, realm) = match principal.split_once('@') {
            Some((names, realm)) => {
                if realm.is_empty() || realm.contains(['@', '/']) {
                    return Err(bad("the realm after '@' is empty or malformed"));
                }
                (names, Some(realm.to_string()))
            }
            None => (principal, None),
        };
        let (service, host) = match names.split_once('/') {
            Some((service, host)) => {
                if host.is_empty() || host.contains('/') {
                    return Err(bad("at most two components, and none empty, are supported"));
                }
                (service, Some(host.to_string()))
            }
            None => (names, None),
        };
        if service.is_empty() {
            return Err(bad("the first component is empty"));
        }
        Ok(KerberosName {
            service: service.to_string(),
            host,
            realm,
        })
    }

    /// The number of components, not counting the realm.
    pub fn components(&self) -> usize {
        1 + usize::from(self.host.is_some())
    }
}

impl std::fmt::Display for KerberosName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.service)?;
        if let Some(host) = &self.host {
            write!(f, "/{host}")?;
        }
        if let Some(realm) = &self.realm {
            write!(f, "@{realm}")?;
        }
        Ok(())
    }
}

/// Replaces a `_HOST` component of `principal` with `hostname`,
/// lower-cased, as HBase's `SecurityUtil.getServerPrincipal` does, so one
/// configuration serves every server of a cluster.
pub fn substitute_host(principal: &str, hostname: &str) -> String {
    match principal.split_once('@') {
        Some((names, realm)) => match names.split_once('/') {
            Some((service, "_HOST")) => {
                format!("{service}/{}@{realm}", hostname.to_lowercase())
            }
            _ => principal.to_string(),
        },
        None => match principal.split_once('/') {
            Some((service, "_HOST")) => format!("{service}/{}", hostname.to_lowercase()),
            _ => principal.to_string(),
        },
    }
}

/// This machine's host name, lower-cased: what `_HOST` stands for in the
/// principals of REST, the web UI and Thrift (HBase's servers take their
/// DNS host name); `localhost` when it cannot be read.
pub fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_lowercase())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// One rule of an `auth_to_local` list.
#[derive(Debug, Clone)]
enum Rule {
    /// `DEFAULT`.
    Default,
    /// `RULE:[n:fmt](regex)s/pattern/replacement/g/L`.
    Rule {
        components: usize,
        format: String,
        matches: Option<Regex>,
        substitution: Option<(Regex, String, bool)>,
        lower_case: bool,
    },
}

/// Hadoop's `auth_to_local` rules, compiled.
#[derive(Debug, Clone)]
pub struct AuthToLocal {
    rules: Vec<Rule>,
    default_realm: String,
    text: Vec<String>,
}

impl AuthToLocal {
    /// Compiles `rules` (each entry one or more rules, separated by white
    /// space or newlines, as in `core-site.xml`), for a server whose
    /// default realm is `default_realm`. An empty list means `DEFAULT`.
    pub fn new(rules: &[String], default_realm: &str) -> Result<AuthToLocal, KerberosError> {
        let mut compiled = Vec::new();
        let mut text = Vec::new();
        for entry in rules {
            let mut rest = entry.trim();
            while !rest.is_empty() {
                let (rule, after) = parse_rule(rest)?;
                compiled.push(rule);
                text.push(rest[..rest.len() - after.len()].trim().to_string());
                rest = after.trim_start();
            }
        }
        if compiled.is_empty() {
            compiled.push(Rule::Default);
            text.push("DEFAULT".to_string());
        }
        Ok(AuthToLocal {
            rules: compiled,
            default_realm: default_realm.to_string(),
            text,
        })
    }

    /// The rules as configured, one per entry.
    pub fn rules(&self) -> &[String] {
        &self.text
    }

    /// The short name of `principal`: a principal without a realm is its
    /// first component; otherwise the first rule that matches decides,
    /// and a principal no rule maps is refused.
    pub fn short_name(&self, principal: &str) -> Result<String, KerberosError> {
        let name = KerberosName::parse(principal)?;
        let Some(realm) = &name.realm else {
            return Ok(name.service);
        };
        let mut params = vec![realm.as_str(), name.service.as_str()];
        if let Some(host) = &name.host {
            params.push(host);
        }
        for rule in &self.rules {
            if let Some(short) = self.apply(rule, &params)? {
                if short.contains(['@', '/']) {
                    return Err(KerberosError::Name(format!(
                        "auth_to_local maps {principal} to {short:?}, which is not a simple user name"
                    )));
                }
                return Ok(short);
            }
        }
        Err(KerberosError::Name(format!(
            "no auth_to_local rule applies to {principal} (rules: {})",
            self.text.join(" ")
        )))
    }

    fn apply(&self, rule: &Rule, params: &[&str]) -> Result<Option<String>, KerberosError> {
        match rule {
            Rule::Default => Ok((params[0] == self.default_realm).then(|| params[1].to_string())),
            Rule::Rule {
                components,
                format,
                matches,
                substitution,
                lower_case,
            } => {
                if *components != params.len() - 1 {
                    return Ok(None);
                }
                let base = fill_parameters(format, params)?;
                if let Some(matches) = matches {
                    if !matches.is_match(&base) {
                        return Ok(None);
                    }
                }
                let mut result = match substitution {
                    Some((pattern, replacement, global)) if *global => pattern
                        .replace_all(&base, replacement.as_str())
                        .into_owned(),
                    Some((pattern, replacement, _)) => {
                        pattern.replace(&base, replacement.as_str()).into_owned()
                    }
                    None => base,
                };
                if *lower_case {
                    result = result.to_lowercase();
                }
                Ok(Some(result))
            }
        }
    }
}

/// `fmt` with `$0`, `$1`, `$2` replaced by the realm and the components.
fn fill_parameters(format: &str, params: &[&str]) -> Result<String, KerberosError> {
    let mut out = String::new();
    let mut chars = format.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some((_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        if digits.is_empty() {
            out.push('$');
            continue;
        }
        let index: usize = digits.parse().map_err(|_| {
            KerberosError::Name(format!(
                "auth_to_local format {format:?}: bad index ${digits}"
            ))
        })?;
        let Some(param) = params.get(index) else {
            return Err(KerberosError::Name(format!(
                "auth_to_local format {format:?} names ${index}, and the principal has {} components",
                params.len() - 1
            )));
        };
        out.push_str(param);
    }
    Ok(out)
}

/// Parses one rule at the start of `text`; answers it and the rest.
fn parse_rule(text: &str) -> Result<(Rule, &str), KerberosError> {
    let bad = |why: &str| KerberosError::Name(format!("auth_to_local rule {text:?}: {why}"));
    if let Some(rest) = text.strip_prefix("DEFAULT") {
        return Ok((Rule::Default, rest));
    }
    let Some(rest) = text.strip_prefix("RULE:[") else {
        return Err(bad("a rule is DEFAULT or starts with RULE:["));
    };
    let Some((head, mut rest)) = rest.split_once(']') else {
        return Err(bad("no ']' closes the [n:format] part"));
    };
    let Some((count, format)) = head.split_once(':') else {
        return Err(bad("the [n:format] part has no ':'"));
    };
    let components: usize = count
        .parse()
        .map_err(|_| bad("the component count before ':' is not a number"))?;
    if !(1..=2).contains(&components) {
        return Err(bad("the component count must be 1 or 2"));
    }
    let mut matches = None;
    if let Some(after) = rest.strip_prefix('(') {
        let Some((regex, after)) = after.split_once(')') else {
            return Err(bad("no ')' closes the (regex) part"));
        };
        matches = Some(
            Regex::new(&format!("^(?:{regex})$"))
                .map_err(|e| bad(&format!("the (regex) part does not compile: {e}")))?,
        );
        rest = after;
    }
    let mut substitution = None;
    if let Some(after) = rest.strip_prefix("s/") {
        let mut parts = after.splitn(3, '/');
        let (Some(pattern), Some(replacement), Some(after)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("the s/pattern/replacement/ part is not closed"));
        };
        let pattern = Regex::new(pattern)
            .map_err(|e| bad(&format!("the substitution's pattern does not compile: {e}")))?;
        let (global, after) = match after.strip_prefix('g') {
            Some(after) => (true, after),
            None => (false, after),
        };
        substitution = Some((pattern, java_replacement(replacement), global));
        rest = after;
    }
    let mut lower_case = false;
    if let Some(after) = rest.strip_prefix("/L") {
        lower_case = true;
        rest = after;
    }
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return Err(bad("unexpected text after the rule"));
    }
    Ok((
        Rule::Rule {
            components,
            format: format.to_string(),
            matches,
            substitution,
            lower_case,
        },
        rest,
    ))
}

/// A Java regex replacement (`$1`) in the `regex` crate's syntax (`${1}`,
/// so `$1x` is group 1 then `x`, as in Java).
fn java_replacement(replacement: &str) -> String {
    let mut out = String::new();
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    if next == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(next);
                    }
                }
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                out.push_str(&format!("${{{digits}}}"));
            }
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &[&str]) -> AuthToLocal {
        let text: Vec<String> = text.iter().map(|s| s.to_string()).collect();
        AuthToLocal::new(&text, "EXAMPLE.COM").unwrap()
    }

    #[test]
    fn principals_split_into_service_host_and_realm() {
        let name = KerberosName::parse("hbase/host1.example.com@EXAMPLE.COM").unwrap();
        assert_eq!(name.service, "hbase");
        assert_eq!(name.host.as_deref(), Some("host1.example.com"));
        assert_eq!(name.realm.as_deref(), Some("EXAMPLE.COM"));
        assert_eq!(name.components(), 2);
        assert_eq!(name.to_string(), "hbase/host1.example.com@EXAMPLE.COM");
        for bad in ["", "@R", "a/b/c@R", "a@", "a/@R", "a@R@S"] {
            assert!(KerberosName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn host_substitution_lower_cases_the_host_and_touches_only_host() {
        assert_eq!(
            substitute_host("hbase/_HOST@R", "Node1.Example.COM"),
            "hbase/node1.example.com@R"
        );
        assert_eq!(substitute_host("hbase/fixed@R", "x"), "hbase/fixed@R");
        assert_eq!(substitute_host("hbase/_HOST", "X"), "hbase/x");
        assert_eq!(substitute_host("_HOST@R", "x"), "_HOST@R");
    }

    #[test]
    fn default_maps_the_default_realm_only() {
        let r = rules(&[]);
        assert_eq!(r.short_name("alice@EXAMPLE.COM").unwrap(), "alice");
        assert_eq!(r.short_name("hbase/h1@EXAMPLE.COM").unwrap(), "hbase");
        assert_eq!(r.short_name("alice").unwrap(), "alice");
        let err = r.short_name("alice@OTHER.ORG").unwrap_err().to_string();
        assert!(err.contains("no auth_to_local rule applies"), "{err}");
    }

    #[test]
    fn rules_apply_in_order_with_format_regex_substitution_and_lower_case() {
        let r = rules(&[
            "RULE:[2:$1@$0](hbase@OTHER\\.ORG)s/.*/hbase/",
            "RULE:[1:$1@$0](.*@OTHER\\.ORG)s/@.*//",
            "RULE:[1:$1](J.*)s/J/j/g/L",
            "DEFAULT",
        ]);
        assert_eq!(r.short_name("hbase/h@OTHER.ORG").unwrap(), "hbase");
        assert_eq!(r.short_name("bob@OTHER.ORG").unwrap(), "bob");
        assert_eq!(r.short_name("JOHN@EXAMPLE.COM").unwrap(), "john");
        assert_eq!(r.short_name("carol@EXAMPLE.COM").unwrap(), "carol");
        assert!(r.short_name("carol/admin@THIRD").is_err());
    }

    #[test]
    fn several_rules_in_one_entry_split_on_white_space() {
        let r = rules(&["RULE:[1:$1@$0](.*@A)s/@.*//\n  RULE:[2:$1](x)s/x/y/ DEFAULT"]);
        assert_eq!(r.rules().len(), 3);
        assert_eq!(r.short_name("u@A").unwrap(), "u");
        assert_eq!(r.short_name("x/h@Z").unwrap(), "y");
    }

    #[test]
    fn a_rule_without_substitution_gives_the_formatted_name() {
        let r = rules(&["RULE:[2:$1_$2]"]);
        assert_eq!(r.short_name("svc/h@X").unwrap(), "svc_h");
    }

    #[test]
    fn a_result_that_is_not_a_simple_name_is_refused() {
        let r = rules(&["RULE:[1:$1@$0]"]);
        let err = r.short_name("a@X").unwrap_err().to_string();
        assert!(err.contains("not a simple user name"), "{err}");
    }

    #[test]
    fn group_references_in_replacements_follow_java() {
        let r = rules(&["RULE:[1:$1](.*-.*)s/([a-z]+)-([a-z]+)/$2x$1/"]);
        assert_eq!(r.short_name("ab-cd@Q").unwrap(), "cdxab");
    }

    #[test]
    fn malformed_rules_are_refused_with_the_rule_named() {
        for bad in [
            "RULE:[1:$1",
            "RULE:[3:$1]",
            "RULE:[x:$1]",
            "RULE:[1:$1](abc",
            "RULE:[1:$1](a)s/b/c",
            "RULE:[1:$1]((x)s/a/b/",
            "RULE:[1:$1](([a-z]+))",
            "RULE:[1:$1](([a-z]+))",
            "SOMETHING",
            "RULE:[1:$1]junk",
        ] {
            let err = AuthToLocal::new(&[bad.to_string()], "R").unwrap_err();
            assert!(
                err.to_string().contains("auth_to_local rule"),
                "{bad}: {err}"
            );
        }
        let err = rules(&["RULE:[1:$5]"]).short_name("a@R").unwrap_err();
        assert!(err.to_string().contains("$5"), "{err}");
    }
}
