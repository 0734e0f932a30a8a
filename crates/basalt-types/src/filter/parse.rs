//! HBase's filter language (`ParseFilter`), as Thrift, the shell and REST
//! accept it:
//!
//! ```text
//! expr     := or
//! or       := and ( "OR" and )*
//! and      := unary ( "AND" unary )*
//! unary    := "SKIP" unary | "WHILE" unary | "(" or ")" | Name "(" args? ")"
//! args     := arg ( "," arg )*
//! arg      := 'quoted string' | integer | true | false | < | <= | = | != | >= | >
//! ```
//!
//! As in HBase, the operators `AND`, `OR`, `SKIP` and `WHILE` and the filter
//! names are case-sensitive, booleans are not, and a quote inside a quoted
//! string is written twice. A chain `a AND b AND c` becomes one list, like
//! HBase's operator stack builds it; parentheses start a new list.
//!
//! Where HBase's scanner is more lenient than its documentation (arguments
//! need no commas between them, stray commas are ignored) this parser asks
//! for the documented syntax. Every error is [`Error::FilterSyntax`] with the
//! byte offset of the offending token.

use std::sync::Arc;

use bytes::Bytes;

use super::{Comparator, CompareOp, Filter, ListOperator, SingleColumnValue};
use crate::error::{Error, Result};

#[cfg(test)]
mod tests;

/// Deepest nesting of parentheses and SKIP/WHILE accepted. The parser keeps
/// its own stacks, but building, comparing and dropping the resulting
/// [`Filter`] recurse once per level: untrusted input must not be able to
/// exhaust the thread's stack that way.
const MAX_DEPTH: usize = 100;

/// Longest piece of the input quoted back in an error message.
const MAX_SHOWN_CHARS: usize = 40;

/// Every filter the language knows, by its HBase name.
const FILTER_NAMES: &[&str] = &[
    "KeyOnlyFilter",
    "FirstKeyOnlyFilter",
    "PrefixFilter",
    "ColumnPrefixFilter",
    "MultipleColumnPrefixFilter",
    "ColumnCountGetFilter",
    "PageFilter",
    "ColumnPaginationFilter",
    "InclusiveStopFilter",
    "TimestampsFilter",
    "RowFilter",
    "FamilyFilter",
    "QualifierFilter",
    "ValueFilter",
    "ColumnRangeFilter",
    "SingleColumnValueFilter",
    "SingleColumnValueExcludeFilter",
    "DependentColumnFilter",
    "ColumnValueFilter",
];

/// Parses a filter string; see the module docs for the grammar.
pub(super) fn parse_filter(text: &str) -> Result<Filter> {
    let mut parser = Parser {
        tokens: lex(text),
        next: 0,
        end: text.len(),
    };
    if parser.tokens.is_empty() {
        return Err(syntax(text.len(), "empty filter string"));
    }
    let filter = parser.expression()?;
    match parser.peek() {
        None => Ok(filter),
        Some(token) => Err(match &token.kind {
            Kind::RParen => syntax(token.at, "unmatched ')'"),
            Kind::Word(w) if w.eq_ignore_ascii_case("AND") || w.eq_ignore_ascii_case("OR") => {
                syntax(
                    token.at,
                    format!(
                        "expected AND, OR or end of input, found '{w}' (operators are upper case)"
                    ),
                )
            }
            _ => parser.unexpected(Some(token), "AND, OR or end of input"),
        }),
    }
}

fn syntax(position: usize, message: impl Into<String>) -> Error {
    Error::FilterSyntax {
        position,
        message: message.into(),
    }
}

/// A piece of the input for an error message, cut short if long.
fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(MAX_SHOWN_CHARS).collect();
    if out.len() < text.len() {
        out.push_str("...");
    }
    out
}

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Kind<'a> {
    LParen,
    RParen,
    Comma,
    /// A quoted string with its doubled quotes undone.
    Quoted(Vec<u8>),
    /// A run of anything else: a filter name, an operator keyword, a number,
    /// a boolean or a comparison operator.
    Word(&'a str),
    /// An opening quote never closed; the lexer stops there.
    Unterminated,
}

#[derive(Debug, Clone)]
struct Token<'a> {
    kind: Kind<'a>,
    /// Byte offset of the token's first byte.
    at: usize,
}

fn ends_word(byte: u8) -> bool {
    byte.is_ascii_whitespace() || matches!(byte, b'(' | b')' | b',' | b'\'')
}

/// Splits the input into tokens. An unterminated quote becomes a final
/// [`Kind::Unterminated`] token so that an earlier error still wins.
fn lex(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let at = i;
        let kind = match byte {
            b if b.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'(' => {
                i += 1;
                Kind::LParen
            }
            b')' => {
                i += 1;
                Kind::RParen
            }
            b',' => {
                i += 1;
                Kind::Comma
            }
            b'\'' => {
                i += 1;
                let mut value = Vec::new();
                let mut closed = false;
                while let Some(&b) = bytes.get(i) {
                    if b == b'\'' {
                        if bytes.get(i + 1) == Some(&b'\'') {
                            value.push(b'\'');
                            i += 2;
                            continue;
                        }
                        i += 1;
                        closed = true;
                        break;
                    }
                    value.push(b);
                    i += 1;
                }
                if !closed {
                    tokens.push(Token {
                        kind: Kind::Unterminated,
                        at,
                    });
                    return tokens;
                }
                Kind::Quoted(value)
            }
            _ => {
                while bytes.get(i).is_some_and(|&b| !ends_word(b)) {
                    i += 1;
                }
                // Words end before an ASCII byte or at the end, so both ends
                // are character boundaries and `get` always succeeds.
                Kind::Word(text.get(at..i).unwrap_or_default())
            }
        };
        tokens.push(Token { kind, at });
    }
    tokens
}

// ---------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------

/// A cursor over the tokens of one filter string.
struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    next: usize,
    /// Input length: the position reported for "end of input".
    end: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.next)
    }

    fn peek_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token { kind: Kind::Word(w), .. }) if *w == word)
    }

    fn advance(&mut self) {
        self.next += 1;
    }

    /// The error for finding `found` where `expected` should be.
    fn unexpected(&self, found: Option<&Token<'a>>, expected: &str) -> Error {
        let Some(token) = found else {
            return syntax(self.end, format!("expected {expected}, found end of input"));
        };
        let what = match &token.kind {
            Kind::Unterminated => {
                return syntax(
                    token.at,
                    "unterminated quoted string: missing closing quote",
                )
            }
            Kind::LParen => "'('".to_string(),
            Kind::RParen => "')'".to_string(),
            Kind::Comma => "','".to_string(),
            Kind::Quoted(_) => "a quoted string".to_string(),
            Kind::Word(w) => format!("'{}'", shown(w)),
        };
        syntax(token.at, format!("expected {expected}, found {what}"))
    }

    /// Parses one expression with explicit stacks instead of recursion, so
    /// the stack use does not grow with the input's nesting.
    ///
    /// Prefix operators (SKIP, WHILE) apply as soon as their operand is
    /// complete, which makes them bind tighter than AND; an AND chain is
    /// folded into one list when an OR, a `)` or the end closes it, and an OR
    /// chain when a `)` or the end closes it.
    fn expression(&mut self) -> Result<Filter> {
        let mut operands: Vec<Filter> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        // Open groups and prefixes on `pending`: the nesting of the result.
        let mut nesting = 0usize;
        let mut open_groups = 0usize;
        loop {
            // An operand: any prefixes and groups, then a filter call.
            loop {
                let Some(token) = self.peek() else {
                    return Err(self.unexpected(None, "a filter"));
                };
                let at = token.at;
                let opened = match token.kind {
                    Kind::Word("SKIP") => Pending::Skip,
                    Kind::Word("WHILE") => Pending::While,
                    Kind::LParen => Pending::Group { at },
                    Kind::Word(op @ ("AND" | "OR")) => {
                        return Err(syntax(
                            at,
                            format!("expected a filter, found the operator {op}"),
                        ))
                    }
                    Kind::Word(name) => {
                        let filter = self.call(name, at)?;
                        operands.push(filter);
                        break;
                    }
                    _ => return Err(self.unexpected(Some(token), "a filter")),
                };
                nesting += 1;
                if nesting > MAX_DEPTH {
                    return Err(syntax(
                        at,
                        format!("filter nested more than {MAX_DEPTH} levels deep"),
                    ));
                }
                if matches!(opened, Pending::Group { .. }) {
                    open_groups += 1;
                }
                pending.push(opened);
                self.advance();
            }
            // After an operand: apply finished prefixes and close groups.
            loop {
                nesting -= apply_prefixes(&mut operands, &mut pending);
                let closes_group = open_groups > 0
                    && matches!(
                        self.peek(),
                        Some(Token {
                            kind: Kind::RParen,
                            ..
                        })
                    );
                if !closes_group {
                    break;
                }
                self.advance();
                fold(&mut operands, &mut pending, ListOperator::MustPassAll);
                fold(&mut operands, &mut pending, ListOperator::MustPassOne);
                if let Some(Pending::Group { .. }) = pending.last() {
                    pending.pop();
                }
                open_groups -= 1;
                nesting -= 1;
            }
            // An infix operator, or the end of the expression.
            if self.peek_word("AND") {
                self.advance();
                pending.push(Pending::And);
            } else if self.peek_word("OR") {
                self.advance();
                fold(&mut operands, &mut pending, ListOperator::MustPassAll);
                pending.push(Pending::Or);
            } else {
                if let Some(&Pending::Group { at }) = pending
                    .iter()
                    .rev()
                    .find(|p| matches!(p, Pending::Group { .. }))
                {
                    return Err(self.unexpected(
                        self.peek(),
                        &format!("')' to close the '(' at position {at}"),
                    ));
                }
                fold(&mut operands, &mut pending, ListOperator::MustPassAll);
                fold(&mut operands, &mut pending, ListOperator::MustPassOne);
                return match (operands.pop(), operands.is_empty()) {
                    (Some(filter), true) => Ok(filter),
                    // Every operator folds its operands, so this means a bug
                    // here; report it rather than return a wrong filter.
                    _ => Err(syntax(
                        self.peek().map_or(self.end, |t| t.at),
                        "internal error: unbalanced filter expression",
                    )),
                };
            }
        }
    }

    /// `call := Name ( args? )`, then the filter built from its arguments.
    fn call(&mut self, name: &'a str, name_at: usize) -> Result<Filter> {
        let Some(&known) = FILTER_NAMES.iter().find(|n| **n == name) else {
            return Err(syntax(
                name_at,
                format!("unknown filter name '{}'", shown(name)),
            ));
        };
        self.advance();
        match self.peek() {
            Some(Token {
                kind: Kind::LParen, ..
            }) => self.advance(),
            other => return Err(self.unexpected(other, &format!("'(' after {known}"))),
        }
        let mut items = Vec::new();
        let close_at = loop {
            if items.is_empty() {
                if let Some(Token {
                    kind: Kind::RParen,
                    at,
                }) = self.peek()
                {
                    let at = *at;
                    self.advance();
                    break at;
                }
            }
            let arg = match self.peek() {
                Some(Token {
                    kind: Kind::Quoted(bytes),
                    at,
                }) => Arg::Quoted {
                    bytes: bytes.clone(),
                    at: *at,
                },
                Some(Token {
                    kind: Kind::Word(text),
                    at,
                }) => Arg::Word { text, at: *at },
                other => return Err(self.unexpected(other, &format!("an argument of {known}"))),
            };
            self.advance();
            items.push(arg);
            match self.peek() {
                Some(Token {
                    kind: Kind::Comma, ..
                }) => self.advance(),
                Some(Token {
                    kind: Kind::RParen,
                    at,
                }) => {
                    let at = *at;
                    self.advance();
                    break at;
                }
                other => {
                    return Err(
                        self.unexpected(other, &format!("',' or ')' in the arguments of {known}"))
                    )
                }
            }
        };
        build(Args {
            filter: known,
            items,
            close_at,
        })
    }
}

/// An operator waiting on [`Parser::expression`]'s stack.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pending {
    Skip,
    While,
    /// An open parenthesis and its position.
    Group {
        at: usize,
    },
    And,
    Or,
}

/// Wraps the newest operand in the SKIP/WHILE prefixes waiting right above
/// it; returns how many were applied.
fn apply_prefixes(operands: &mut Vec<Filter>, pending: &mut Vec<Pending>) -> usize {
    let mut applied = 0;
    while let Some(&prefix @ (Pending::Skip | Pending::While)) = pending.last() {
        let Some(inner) = operands.pop() else {
            break;
        };
        pending.pop();
        operands.push(if prefix == Pending::Skip {
            Filter::Skip(Box::new(inner))
        } else {
            Filter::While(Box::new(inner))
        });
        applied += 1;
    }
    applied
}

/// Folds the chain of `operator` on top of `pending` and the operands it
/// joins into one list.
fn fold(operands: &mut Vec<Filter>, pending: &mut Vec<Pending>, operator: ListOperator) {
    let marker = match operator {
        ListOperator::MustPassAll => Pending::And,
        ListOperator::MustPassOne => Pending::Or,
    };
    let mut joined = 0;
    while pending.last() == Some(&marker) {
        pending.pop();
        joined += 1;
    }
    if joined == 0 {
        return;
    }
    let members = operands.split_off(operands.len().saturating_sub(joined + 1));
    operands.push(Filter::List(operator, members));
}

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

#[derive(Debug)]
enum Arg<'a> {
    Quoted { bytes: Vec<u8>, at: usize },
    Word { text: &'a str, at: usize },
}

impl Arg<'_> {
    fn at(&self) -> usize {
        match self {
            Arg::Quoted { at, .. } | Arg::Word { at, .. } => *at,
        }
    }

    fn describe(&self) -> String {
        match self {
            Arg::Quoted { .. } => "a quoted string".to_string(),
            Arg::Word { text, .. } => format!("'{}'", shown(text)),
        }
    }
}

/// The arguments of one filter call, with what error messages need.
struct Args<'a> {
    filter: &'static str,
    items: Vec<Arg<'a>>,
    /// Position of the closing parenthesis: where missing arguments belong.
    close_at: usize,
}

enum NumberError {
    NotANumber,
    OutOfRange,
}

/// HBase's integer syntax: an optional minus sign and decimal digits.
fn parse_long(text: &str) -> std::result::Result<i64, NumberError> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NumberError::NotANumber);
    }
    let mut value: i64 = 0;
    for digit in digits.bytes().map(|b| i64::from(b - b'0')) {
        // Accumulating on the sign's side lets i64::MIN through.
        value = value
            .checked_mul(10)
            .and_then(|v| {
                if negative {
                    v.checked_sub(digit)
                } else {
                    v.checked_add(digit)
                }
            })
            .ok_or(NumberError::OutOfRange)?;
    }
    Ok(value)
}

impl<'a> Args<'a> {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn error(&self, at: usize, message: impl std::fmt::Display) -> Error {
        syntax(at, format!("{}: {message}", self.filter))
    }

    /// Checks the argument count against the allowed ones.
    fn expect_count(&self, allowed: &[usize], description: &str) -> Result<()> {
        let n = self.items.len();
        if allowed.contains(&n) {
            return Ok(());
        }
        let max = allowed.iter().copied().max().unwrap_or(0);
        // Too many: point at the first one too many; too few: at the ')'.
        let at = self.items.get(max).map_or(self.close_at, Arg::at);
        Err(self.error(at, format!("expected {description}, found {n}")))
    }

    fn arg(&self, index: usize) -> Result<&Arg<'a>> {
        self.items
            .get(index)
            .ok_or_else(|| self.error(self.close_at, format!("missing argument {}", index + 1)))
    }

    fn string(&self, index: usize) -> Result<Bytes> {
        match self.arg(index)? {
            Arg::Quoted { bytes, .. } => Ok(Bytes::copy_from_slice(bytes)),
            other => Err(self.error(
                other.at(),
                format!("expected a quoted string, found {}", other.describe()),
            )),
        }
    }

    fn word(&self, index: usize, expected: &str) -> Result<(&'a str, usize)> {
        match self.arg(index)? {
            Arg::Word { text, at } => Ok((text, *at)),
            other => Err(self.error(
                other.at(),
                format!("expected {expected}, found {}", other.describe()),
            )),
        }
    }

    fn boolean(&self, index: usize) -> Result<bool> {
        let (text, at) = self.word(index, "true or false")?;
        if text.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if text.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(self.error(
                at,
                format!("expected true or false, found '{}'", shown(text)),
            ))
        }
    }

    fn long(&self, index: usize) -> Result<(i64, usize)> {
        let (text, at) = self.word(index, "an integer")?;
        match parse_long(text) {
            Ok(value) => Ok((value, at)),
            Err(NumberError::NotANumber) => {
                Err(self.error(at, format!("expected an integer, found '{}'", shown(text))))
            }
            Err(NumberError::OutOfRange) => Err(self.error(
                at,
                format!("integer '{}' does not fit in 64 bits", shown(text)),
            )),
        }
    }

    fn non_negative_long(&self, index: usize, what: &str) -> Result<u64> {
        let (value, at) = self.long(index)?;
        u64::try_from(value)
            .map_err(|_| self.error(at, format!("{what} must not be negative, found {value}")))
    }

    /// A Java `int` that must not be negative, as HBase's count arguments.
    fn non_negative_int(&self, index: usize, what: &str) -> Result<u32> {
        let (value, at) = self.long(index)?;
        if value < 0 {
            return Err(self.error(at, format!("{what} must not be negative, found {value}")));
        }
        if value > i64::from(i32::MAX) {
            return Err(self.error(
                at,
                format!("{what} is too large, found {value} (at most {})", i32::MAX),
            ));
        }
        u32::try_from(value).map_err(|_| self.error(at, format!("{what} is out of range")))
    }

    fn op(&self, index: usize) -> Result<(CompareOp, usize)> {
        const EXPECTED: &str = "a comparison operator (<, <=, =, !=, >=, >)";
        let (text, at) = self.word(index, EXPECTED)?;
        let op = match text {
            "<" => CompareOp::Less,
            "<=" => CompareOp::LessOrEqual,
            "=" => CompareOp::Equal,
            "!=" => CompareOp::NotEqual,
            ">=" => CompareOp::GreaterOrEqual,
            ">" => CompareOp::Greater,
            _ => {
                return Err(self.error(at, format!("expected {EXPECTED}, found '{}'", shown(text))))
            }
        };
        Ok((op, at))
    }

    fn comparator(&self, index: usize) -> Result<Comparator> {
        const EXPECTED: &str = "a comparator 'type:value'";
        let (bytes, at) = match self.arg(index)? {
            Arg::Quoted { bytes, at } => (bytes, *at),
            other => {
                return Err(self.error(
                    other.at(),
                    format!("expected {EXPECTED}, found {}", other.describe()),
                ))
            }
        };
        let mut parts = bytes.splitn(2, |&b| b == b':');
        let (Some(kind), Some(value)) = (parts.next(), parts.next()) else {
            return Err(self.error(
                at,
                format!(
                    "comparator '{}' has no type: expected binary:, binaryprefix:, \
                     regexstring: or substring: before the value",
                    shown(&String::from_utf8_lossy(bytes))
                ),
            ));
        };
        // The quoted string came from a &str and was cut at an ASCII colon,
        // so both halves are UTF-8; the checks only keep this total.
        let text = || {
            std::str::from_utf8(value)
                .map_err(|_| self.error(at, "comparator value is not valid UTF-8"))
        };
        match kind {
            b"binary" => Ok(Comparator::Binary(Bytes::copy_from_slice(value))),
            b"binaryprefix" => Ok(Comparator::BinaryPrefix(Bytes::copy_from_slice(value))),
            b"regexstring" => {
                let pattern = text()?;
                regex::bytes::Regex::new(pattern)
                    .map(|r| Comparator::Regex(Arc::new(r)))
                    .map_err(|e| {
                        self.error(
                            at,
                            format!("invalid regular expression '{}': {e}", shown(pattern)),
                        )
                    })
            }
            b"substring" => Ok(Comparator::substring(text()?)),
            _ => Err(self.error(
                at,
                format!(
                    "unknown comparator type '{}': expected binary, binaryprefix, \
                     regexstring or substring",
                    shown(&String::from_utf8_lossy(kind))
                ),
            )),
        }
    }

    /// An operator and a comparator, checked to go together: regexstring
    /// and substring only answer "matches or not".
    fn compare(&self, op_index: usize, comparator_index: usize) -> Result<(CompareOp, Comparator)> {
        let (op, op_at) = self.op(op_index)?;
        let comparator = self.comparator(comparator_index)?;
        if comparator.is_match_only() && !matches!(op, CompareOp::Equal | CompareOp::NotEqual) {
            return Err(self.error(
                op_at,
                format!(
                    "regexstring and substring comparators only work with = and !=, found {}",
                    op.symbol()
                ),
            ));
        }
        Ok((op, comparator))
    }

    fn single_column_value(&self) -> Result<SingleColumnValue> {
        self.expect_count(&[4, 6], "4 or 6 arguments")?;
        let (op, comparator) = self.compare(2, 3)?;
        let (filter_if_missing, latest_version_only) = if self.len() == 6 {
            (self.boolean(4)?, self.boolean(5)?)
        } else {
            (false, true)
        };
        Ok(SingleColumnValue {
            family: self.string(0)?,
            qualifier: self.string(1)?,
            op,
            comparator,
            filter_if_missing,
            latest_version_only,
        })
    }
}

/// Builds the filter `args.filter` names from its arguments.
fn build(args: Args<'_>) -> Result<Filter> {
    let filter = match args.filter {
        "KeyOnlyFilter" => {
            args.expect_count(&[0, 1], "0 or 1 arguments")?;
            Filter::KeyOnly {
                length_as_value: args.len() == 1 && args.boolean(0)?,
            }
        }
        "FirstKeyOnlyFilter" => {
            args.expect_count(&[0], "no arguments")?;
            Filter::FirstKeyOnly
        }
        "PrefixFilter" => {
            args.expect_count(&[1], "1 argument")?;
            Filter::Prefix(args.string(0)?)
        }
        "ColumnPrefixFilter" => {
            args.expect_count(&[1], "1 argument")?;
            Filter::ColumnPrefix(args.string(0)?)
        }
        "MultipleColumnPrefixFilter" => {
            let mut prefixes: Vec<Bytes> = Vec::with_capacity(args.len());
            for (i, arg) in args.items.iter().enumerate() {
                let prefix = args.string(i)?;
                if prefixes.contains(&prefix) {
                    return Err(args.error(arg.at(), "prefixes must be distinct"));
                }
                prefixes.push(prefix);
            }
            Filter::MultipleColumnPrefix(prefixes)
        }
        "ColumnCountGetFilter" => {
            args.expect_count(&[1], "1 argument")?;
            Filter::ColumnCountGet(args.non_negative_int(0, "limit")?)
        }
        "PageFilter" => {
            args.expect_count(&[1], "1 argument")?;
            Filter::Page(args.non_negative_long(0, "page size")?)
        }
        "ColumnPaginationFilter" => {
            args.expect_count(&[2], "2 arguments (limit, offset)")?;
            Filter::ColumnPagination {
                limit: args.non_negative_int(0, "limit")?,
                offset: args.non_negative_int(1, "offset")?,
            }
        }
        "InclusiveStopFilter" => {
            args.expect_count(&[1], "1 argument")?;
            Filter::InclusiveStop(args.string(0)?)
        }
        "TimestampsFilter" => {
            let timestamps = (0..args.len())
                .map(|i| {
                    args.non_negative_long(i, "timestamp")
                        .map(|t| i64::try_from(t).unwrap_or(i64::MAX))
                })
                .collect::<Result<Vec<i64>>>()?;
            Filter::Timestamps(timestamps)
        }
        "RowFilter" | "FamilyFilter" | "QualifierFilter" | "ValueFilter" => {
            args.expect_count(&[2], "2 arguments (operator, comparator)")?;
            let (op, comparator) = args.compare(0, 1)?;
            match args.filter {
                "RowFilter" => Filter::Row(op, comparator),
                "FamilyFilter" => Filter::Family(op, comparator),
                "QualifierFilter" => Filter::Qualifier(op, comparator),
                _ => Filter::Value(op, comparator),
            }
        }
        "ColumnRangeFilter" => {
            args.expect_count(&[4], "4 arguments (min, minInclusive, max, maxInclusive)")?;
            let bound = |b: Bytes| (!b.is_empty()).then_some(b);
            Filter::ColumnRange {
                min: bound(args.string(0)?),
                min_inclusive: args.boolean(1)?,
                max: bound(args.string(2)?),
                max_inclusive: args.boolean(3)?,
            }
        }
        "SingleColumnValueFilter" => Filter::SingleColumnValue(args.single_column_value()?),
        "SingleColumnValueExcludeFilter" => {
            Filter::SingleColumnValueExclude(args.single_column_value()?)
        }
        "DependentColumnFilter" => {
            args.expect_count(&[2, 3, 5], "2, 3 or 5 arguments")?;
            Filter::DependentColumn {
                family: args.string(0)?,
                qualifier: args.string(1)?,
                drop_dependent_column: args.len() >= 3 && args.boolean(2)?,
                value_test: if args.len() == 5 {
                    Some(args.compare(3, 4)?)
                } else {
                    None
                },
            }
        }
        "ColumnValueFilter" => {
            args.expect_count(
                &[4],
                "4 arguments (family, qualifier, operator, comparator)",
            )?;
            let (op, comparator) = args.compare(2, 3)?;
            Filter::ColumnValue {
                family: args.string(0)?,
                qualifier: args.string(1)?,
                op,
                comparator,
            }
        }
        other => {
            // FILTER_NAMES and this match list the same names.
            return Err(syntax(
                args.close_at,
                format!("unknown filter name '{other}'"),
            ));
        }
    };
    Ok(filter)
}
