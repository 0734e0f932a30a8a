//! The shell's input language: the subset of Ruby literals the HBase shell
//! is typed in.
//!
//! A line holds commands separated by `;`. A command is a name followed by
//! comma-separated arguments, optionally in parentheses. Arguments are
//! `'single'` or `"double"` quoted strings (double quotes understand `\xNN`,
//! `\n`, `\t`, `\r`, `\0`, `\\`, `\"` and `\'`), integers (negative too),
//! `true`, `false`, `nil`, bare constants (`NAME`, `VERSIONS`, ...),
//! `[arrays]` and `{KEY => value}` hashes. As in Ruby, trailing
//! `KEY => value` pairs without braces form one hash argument.

use std::fmt;

use bytes::Bytes;

/// One argument value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A quoted string, as bytes (escapes may produce any byte).
    Str(Bytes),
    /// An integer.
    Int(i64),
    /// `true` or `false`.
    Bool(bool),
    /// `nil`.
    Nil,
    /// A bare name such as `NAME` or `VERSIONS`.
    Const(String),
    /// `[a, b, ...]`.
    Array(Vec<Arg>),
    /// `{k => v, ...}` in the order written.
    Hash(Vec<(Arg, Arg)>),
}

impl Arg {
    /// A short name of the argument's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Arg::Str(_) => "string",
            Arg::Int(_) => "integer",
            Arg::Bool(_) => "boolean",
            Arg::Nil => "nil",
            Arg::Const(_) => "constant",
            Arg::Array(_) => "array",
            Arg::Hash(_) => "hash",
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Str(b) => write!(f, "'{}'", crate::format::binary(b)),
            Arg::Int(i) => write!(f, "{i}"),
            Arg::Bool(b) => write!(f, "{b}"),
            Arg::Nil => f.write_str("nil"),
            Arg::Const(c) => f.write_str(c),
            Arg::Array(items) => {
                f.write_str("[")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
            Arg::Hash(pairs) => {
                f.write_str("{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} => {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// One parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The command name.
    pub name: String,
    /// Its arguments.
    pub args: Vec<Arg>,
}

/// Input that does not parse, with the 1-based column where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based character column in the line.
    pub column: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "syntax error at column {}: {}",
            self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses one line into its `;`-separated commands. Blank commands and
/// `#` comments are skipped.
pub fn parse_line(line: &str) -> Result<Vec<Command>, ParseError> {
    let mut p = Parser {
        chars: line.chars().collect(),
        pos: 0,
    };
    let mut out = Vec::new();
    loop {
        p.skip_space();
        match p.peek() {
            None => return Ok(out),
            Some(';') => p.pos += 1,
            Some('#') => return Ok(out),
            Some(_) => out.push(p.command()?),
        }
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn error<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            column: self.pos + 1,
            message: message.into(),
        })
    }

    fn skip_space(&mut self) {
        while self
            .peek()
            .is_some_and(|c| c == ' ' || c == '\t' || c == '\r')
        {
            self.pos += 1;
        }
    }

    fn at_end_of_command(&mut self) -> bool {
        self.skip_space();
        matches!(self.peek(), None | Some(';') | Some('#'))
    }

    fn command(&mut self) -> Result<Command, ParseError> {
        let name = self.identifier();
        if name.is_empty() {
            let c = self.peek().unwrap_or(' ');
            return self.error(format!("expected a command name, found '{c}'"));
        }
        let parens = {
            // `get('t', 'r')` but not `get ('t')`, which Ruby reads as a
            // parenthesised first argument; both mean the same here.
            self.skip_space();
            if self.peek() == Some('(') {
                self.pos += 1;
                true
            } else {
                false
            }
        };
        let args = self.arguments(parens)?;
        if parens {
            self.skip_space();
            if self.peek() != Some(')') {
                return self.error("expected ')' to close the argument list");
            }
            self.pos += 1;
        }
        if !self.at_end_of_command() {
            let c = self.peek().unwrap_or(' ');
            if c == '\'' || c == '"' || c.is_ascii_alphanumeric() || c == '{' || c == '[' {
                return self.error(format!("expected ',' between arguments, found '{c}'"));
            }
            return self.error(format!("unexpected '{c}' after the arguments"));
        }
        Ok(Command { name, args })
    }

    fn identifier(&mut self) -> String {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '?' || c == '!')
        {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn arguments(&mut self, parens: bool) -> Result<Vec<Arg>, ParseError> {
        let mut args = Vec::new();
        self.skip_space();
        if (parens && self.peek() == Some(')')) || (!parens && self.at_end_of_command()) {
            return Ok(args);
        }
        loop {
            let value = self.value()?;
            self.skip_space();
            if self.peek_arrow() {
                // Braceless trailing hash: `alter 't', NAME => 'f', VERSIONS => 5`.
                let hash = self.hash_pairs(value, None)?;
                args.push(Arg::Hash(hash));
                return Ok(args);
            }
            args.push(value);
            self.skip_space();
            if self.peek() == Some(',') {
                self.pos += 1;
                self.skip_space();
                continue;
            }
            return Ok(args);
        }
    }

    fn peek_arrow(&self) -> bool {
        self.peek() == Some('=') && self.chars.get(self.pos + 1) == Some(&'>')
    }

    /// Reads `key => value` pairs, the first key already read, until the
    /// closing brace (`close`) or the end of the argument list.
    fn hash_pairs(
        &mut self,
        first_key: Arg,
        close: Option<char>,
    ) -> Result<Vec<(Arg, Arg)>, ParseError> {
        let mut pairs = Vec::new();
        let mut key = first_key;
        loop {
            self.skip_space();
            if !self.peek_arrow() {
                return self.error("expected '=>' after a hash key");
            }
            self.pos += 2;
            self.skip_space();
            let value = self.value()?;
            pairs.push((key, value));
            self.skip_space();
            match self.peek() {
                Some(',') => {
                    self.pos += 1;
                    self.skip_space();
                    if close.is_some() && self.peek() == close {
                        return Ok(pairs);
                    }
                    key = self.value()?;
                }
                c if c == close && close.is_some() => return Ok(pairs),
                _ if close.is_none() => return Ok(pairs),
                None => return self.error("unterminated hash: expected '}'"),
                Some(c) => {
                    return self.error(format!("expected ',' or '}}' in a hash, found '{c}'"))
                }
            }
        }
    }

    fn value(&mut self) -> Result<Arg, ParseError> {
        self.skip_space();
        match self.peek() {
            None => self.error("expected a value, found the end of the line"),
            Some('\'') => self.single_quoted(),
            Some('"') => self.double_quoted(),
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    match self.peek() {
                        Some(']') => {
                            self.pos += 1;
                            return Ok(Arg::Array(items));
                        }
                        None => return self.error("unterminated array: expected ']'"),
                        _ => {}
                    }
                    items.push(self.value()?);
                    self.skip_space();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some(']') => {}
                        None => return self.error("unterminated array: expected ']'"),
                        Some(c) => {
                            return self
                                .error(format!("expected ',' or ']' in an array, found '{c}'"))
                        }
                    }
                }
            }
            Some('{') => {
                self.pos += 1;
                self.skip_space();
                match self.peek() {
                    Some('}') => {
                        self.pos += 1;
                        return Ok(Arg::Hash(Vec::new()));
                    }
                    None => return self.error("unterminated hash: expected '}'"),
                    _ => {}
                }
                let key = self.value()?;
                let pairs = self.hash_pairs(key, Some('}'))?;
                self.pos += 1;
                Ok(Arg::Hash(pairs))
            }
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.pos;
                let mut name = self.identifier();
                // Qualified constants such as `org.apache...Filter` or
                // `Bytes.toBytes` are not Ruby this shell evaluates.
                if self.peek() == Some('.') {
                    self.pos = start;
                    return self.error(format!(
                        "'{name}.' : only literals (strings, numbers, true/false/nil, constants, arrays, hashes) are understood"
                    ));
                }
                if name.ends_with('?') || name.ends_with('!') {
                    self.pos = start;
                    return self.error(format!("unexpected name '{name}'"));
                }
                Ok(match name.as_str() {
                    "true" => Arg::Bool(true),
                    "false" => Arg::Bool(false),
                    "nil" => Arg::Nil,
                    _ => Arg::Const(std::mem::take(&mut name)),
                })
            }
            Some(c) => self.error(format!("unexpected '{c}'")),
        }
    }

    fn number(&mut self) -> Result<Arg, ParseError> {
        let start = self.pos;
        if self.peek() == Some('-') {
            self.pos += 1;
        }
        let digits_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '_') {
            self.pos += 1;
        }
        if self.pos == digits_start {
            self.pos = start;
            return self.error("expected a number after '-'");
        }
        if self
            .peek()
            .is_some_and(|c| c == '.' || c.is_ascii_alphabetic())
        {
            return self.error("only whole numbers are understood");
        }
        let text: String = self.chars[start..self.pos]
            .iter()
            .filter(|&&c| c != '_')
            .collect();
        match text.parse() {
            Ok(n) => Ok(Arg::Int(n)),
            Err(_) => {
                self.pos = start;
                self.error(format!("number {text} is out of range"))
            }
        }
    }

    fn single_quoted(&mut self) -> Result<Arg, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => {
                    self.pos = start;
                    return self.error("unterminated string: missing closing '");
                }
                Some('\'') => {
                    self.pos += 1;
                    return Ok(Arg::Str(Bytes::from(s.into_bytes())));
                }
                // In Ruby's single quotes only \' and \\ are escapes.
                Some('\\') if matches!(self.chars.get(self.pos + 1), Some('\'') | Some('\\')) => {
                    s.push(self.chars[self.pos + 1]);
                    self.pos += 2;
                }
                Some(c) => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn double_quoted(&mut self) -> Result<Arg, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.peek() {
                None => {
                    self.pos = start;
                    return self.error("unterminated string: missing closing \"");
                }
                Some('"') => {
                    self.pos += 1;
                    return Ok(Arg::Str(Bytes::from(out)));
                }
                Some('\\') => {
                    self.pos += 1;
                    let Some(c) = self.peek() else {
                        self.pos = start;
                        return self.error("unterminated string: missing closing \"");
                    };
                    self.pos += 1;
                    match c {
                        'n' => out.push(b'\n'),
                        't' => out.push(b'\t'),
                        'r' => out.push(b'\r'),
                        '0' => out.push(0),
                        'e' => out.push(0x1b),
                        'x' => {
                            let mut value = 0u8;
                            let mut digits = 0;
                            while digits < 2 {
                                match self.peek().and_then(|c| c.to_digit(16)) {
                                    Some(d) => {
                                        value = value * 16 + d as u8;
                                        digits += 1;
                                        self.pos += 1;
                                    }
                                    None => break,
                                }
                            }
                            if digits == 0 {
                                return self.error("\\x must be followed by hex digits");
                            }
                            out.push(value);
                        }
                        other => {
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                }
                Some(c) => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    self.pos += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Arg {
        Arg::Str(Bytes::copy_from_slice(v.as_bytes()))
    }

    #[test]
    fn seed_examples_parse() {
        let c =
            parse_line("create 'mytable', {NAME => 'colfam1', BLOOMFILTER => 'ROWCOL'}").unwrap();
        assert_eq!(
            c,
            vec![Command {
                name: "create".into(),
                args: vec![
                    s("mytable"),
                    Arg::Hash(vec![
                        (Arg::Const("NAME".into()), s("colfam1")),
                        (Arg::Const("BLOOMFILTER".into()), s("ROWCOL")),
                    ])
                ]
            }]
        );
        let c = parse_line("scan 'table1', {STARTROW => 'host1', STOPROW => 'host2'}").unwrap();
        assert_eq!(c[0].args.len(), 2);
    }

    #[test]
    fn literals_and_escapes() {
        let c = parse_line(r#"put "t", "r\x00\xff", 'cf:q', "a\"b\n", -12, true, nil, [1, 'x']"#)
            .unwrap();
        assert_eq!(
            c[0].args,
            vec![
                s("t"),
                Arg::Str(Bytes::from_static(b"r\x00\xff")),
                s("cf:q"),
                s("a\"b\n"),
                Arg::Int(-12),
                Arg::Bool(true),
                Arg::Nil,
                Arg::Array(vec![Arg::Int(1), s("x")]),
            ]
        );
        // Single quotes keep backslashes except before ' and \.
        let c = parse_line(r"get 't', 'a\x00\'b'").unwrap();
        assert_eq!(c[0].args[1], s(r"a\x00'b"));
    }

    #[test]
    fn several_commands_parens_and_braceless_hash() {
        let c = parse_line("list; get('t', 'r') ; alter 't', NAME => 'f', VERSIONS => 5").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].args, vec![]);
        assert_eq!(c[1].args, vec![s("t"), s("r")]);
        assert_eq!(
            c[2].args,
            vec![
                s("t"),
                Arg::Hash(vec![
                    (Arg::Const("NAME".into()), s("f")),
                    (Arg::Const("VERSIONS".into()), Arg::Int(5)),
                ])
            ]
        );
        assert!(parse_line("  # a comment").unwrap().is_empty());
        assert!(parse_line(" ; ;").unwrap().is_empty());
    }

    #[test]
    fn errors_name_a_column() {
        let e = parse_line("get 't', 'r").unwrap_err();
        assert_eq!(e.column, 10);
        assert!(e.message.contains("unterminated string"), "{e}");
        let e = parse_line("create 't', {NAME => 'f'").unwrap_err();
        assert!(e.message.contains("unterminated hash"), "{e}");
        let e = parse_line("put 't' 'r'").unwrap_err();
        assert_eq!(e.column, 9);
        let e = parse_line("get 't', [1, 2").unwrap_err();
        assert!(e.message.contains("unterminated array"), "{e}");
        let e = parse_line("get 't', 1.5").unwrap_err();
        assert!(e.message.contains("whole numbers"), "{e}");
        let e = parse_line("get 't', {A => }").unwrap_err();
        assert!(e.message.contains("unexpected '}'"), "{e}");
        let e = parse_line("scan 't', FILTER => org.apache.Foo").unwrap_err();
        assert!(e.message.contains("only literals"), "{e}");
        let e = parse_line("'t'").unwrap_err();
        assert_eq!(e.column, 1);
        let e = parse_line("put \"t\", \"\\xzz\"").unwrap_err();
        assert!(e.message.contains("hex digits"), "{e}");
    }
}
