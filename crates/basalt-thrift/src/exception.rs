//! Basalt errors as HBase's Thrift1 exceptions, and back.
//!
//! Thrift1's `IOError` carries only a message, so the gateway writes the
//! failure the way HBase's Thrift server does: `<Java class>: <text>`, with
//! the class from [`basalt::ErrorKind::java_class`] (the one table of class
//! names) and the text worded like HBase's (`t1 is disabled`, ...). Clients
//! that want the kind back (the remote shell) read it with [`decode`],
//! which maps the class through the same table in reverse.

use basalt::{Error, ErrorKind};

/// How `AlreadyExists` (and HBase's `TableExistsException`) introduce the
/// table's name.
pub const TABLE_IN_USE: &str = "table name already in use: ";

/// The text after the class name for an error of this kind, worded as
/// HBase words it where clients parse it.
pub fn body(e: &Error) -> String {
    match (e.kind(), e.subject(), e.table()) {
        (ErrorKind::TableNotFound, Some(t), _) => t.to_string(),
        (ErrorKind::TableDisabled, Some(t), _) => format!("{t} is disabled"),
        (ErrorKind::TableEnabled, Some(t), _) => format!("{t} is enabled"),
        (ErrorKind::TableExists, Some(t), _) => format!("{TABLE_IN_USE}{t}"),
        // HBase's namespace exceptions carry the bare name.
        (ErrorKind::NamespaceNotFound | ErrorKind::NamespaceExists, Some(n), _) => n.to_string(),
        (ErrorKind::NoSuchFamily, Some(family), Some(table)) => {
            format!("Column family {family} does not exist in table {table}")
        }
        // The region's own message says which region and why.
        (ErrorKind::NotServingRegion, _, _) => match e {
            Error::NotServingRegion(m) => m.clone(),
            other => other.to_string(),
        },
        _ => e.to_string(),
    }
}

/// `<Java class>: <body>`: an `IOError`'s message for the error.
pub fn io_message(e: &Error) -> String {
    format!("{}: {}", e.kind().java_class(), body(e))
}

/// A failure read back from an exception's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The kind, when the message starts with a class the table knows.
    pub kind: Option<ErrorKind>,
    /// The table (or, for a missing family, the family) when the kind names
    /// one and the text could be read.
    pub subject: Option<String>,
    /// The table the failure concerns: the subject for the table kinds,
    /// the table of a missing family.
    pub table: Option<String>,
    /// The text without the class name (the whole message when it had none).
    pub text: String,
}

/// Reads an exception message written by [`io_message`] (or by HBase):
/// the class prefix through [`ErrorKind::from_java_class`], then the
/// subject out of the text for the kinds that name one.
pub fn decode(message: &str) -> Decoded {
    let (class, text) = split_class(message);
    let kind = class.and_then(ErrorKind::from_java_class);
    let (subject, table) = match kind {
        Some(ErrorKind::TableNotFound) => (Some(text.to_string()), None),
        Some(ErrorKind::TableDisabled) => (
            Some(text.trim_end_matches(" is disabled").to_string()),
            None,
        ),
        Some(ErrorKind::TableEnabled) => {
            (Some(text.trim_end_matches(" is enabled").to_string()), None)
        }
        Some(ErrorKind::TableExists) => (Some(table_in_use(text)), None),
        Some(ErrorKind::NamespaceNotFound | ErrorKind::NamespaceExists) => {
            (Some(text.to_string()), None)
        }
        Some(ErrorKind::NoSuchFamily) => text
            .trim_start_matches("Column family ")
            .rsplit_once(" does not exist in table ")
            .map_or((None, None), |(family, table)| {
                (Some(family.to_string()), Some(table.to_string()))
            }),
        _ => (None, None),
    };
    // As with `Error::table`, a table kind's subject is its table (a
    // namespace kind's subject is a namespace).
    let table = match kind {
        Some(ErrorKind::NamespaceNotFound | ErrorKind::NamespaceExists) => None,
        _ => table.or_else(|| subject.clone()),
    };
    Decoded {
        kind,
        subject,
        table,
        text: text.to_string(),
    }
}

/// The table named by an `AlreadyExists` message.
pub fn table_in_use(message: &str) -> String {
    message.trim_start_matches(TABLE_IN_USE).to_string()
}

/// Splits `java.lang.IllegalArgumentException: msg` into the class and the
/// text; a message without such a prefix has no class.
fn split_class(message: &str) -> (Option<&str>, &str) {
    if let Some((head, rest)) = message.split_once(": ") {
        let is_class = !head.is_empty()
            && head.contains('.')
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '$');
        if is_class {
            return (Some(head), rest);
        }
    }
    (None, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_the_class_from_the_one_table() {
        assert_eq!(
            io_message(&Error::TableDisabled("t1".into())),
            "org.apache.hadoop.hbase.TableNotEnabledException: t1 is disabled"
        );
        assert_eq!(
            io_message(&Error::NoSuchFamily {
                table: "t1".into(),
                family: "x".into()
            }),
            "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: \
             Column family x does not exist in table t1"
        );
        assert_eq!(
            io_message(&Error::Closed("db".into())),
            "java.io.IOException: closed: db"
        );
    }

    #[test]
    fn decoding_reads_back_what_encoding_wrote() {
        for e in [
            Error::TableNotFound("t1".into()),
            Error::TableDisabled("t1".into()),
            Error::TableEnabled("t1".into()),
            Error::TableExists("t1".into()),
            Error::NoSuchFamily {
                table: "t1".into(),
                family: "f".into(),
            },
        ] {
            let d = decode(&io_message(&e));
            assert_eq!(d.kind, Some(e.kind()), "{e}");
            assert_eq!(d.subject.as_deref(), e.subject(), "{e}");
            assert_eq!(d.table.as_deref(), e.table(), "{e}");
        }
    }

    #[test]
    fn a_message_without_a_class_is_all_text() {
        let d = decode("no class here: just text");
        assert_eq!(d.kind, None);
        assert_eq!(d.text, "no class here: just text");
        let d = decode("com.example.Unknown: text");
        assert_eq!((d.kind, d.text.as_str()), (None, "text"));
    }
}
