//! The grammar of the forwarding headers a proxy appends to: `X-Forwarded-For`'s list and
//! `Forwarded`'s elements (RFC 7239), split so that nothing a client sends can hide or bend
//! what a trusted proxy appended after it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use http::header::{HeaderMap, HeaderName, FORWARDED};

/// The `X-Forwarded-For` header's name.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Every line of header `name`, in order; `None` if one is not visible ASCII, which makes the
/// whole header untrustworthy (a forwarding proxy writes ASCII).
fn header_lines<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<Vec<&'a str>> {
    headers
        .get_all(name)
        .iter()
        .map(|line| line.to_str().ok())
        .collect()
}

/// `text` without the optional whitespace (spaces and tabs) HTTP allows around list elements.
fn trim_ows(text: &str) -> &str {
    text.trim_matches([' ', '\t'])
}

/// The entries of `X-Forwarded-For`: every line (in order) split at every comma, trimmed,
/// empty ones skipped (RFC 9110, section 5.6.1); none at all if a line is not visible ASCII.
///
/// Every comma separates, quotes included: the header has no quoted form, and honouring one
/// would let a client's lone `"` hide the entries its proxies append after it (`", 10.0.0.1`
/// read as one entry). An entry that is not a node (`"9.9.9.9`) is left for the caller to
/// refuse; it never absorbs its neighbours.
pub(super) fn x_forwarded_for_entries(headers: &HeaderMap) -> Vec<&str> {
    header_lines(headers, &X_FORWARDED_FOR)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|line| line.split(','))
        .map(trim_ows)
        .filter(|entry| !entry.is_empty())
        .collect()
}

/// The elements of `Forwarded` (RFC 7239), every line's in order: `Some` for a well-formed
/// element (trimmed), `None` for a malformed one, empty elements skipped; none at all if a
/// line is not visible ASCII. [`forwarded_line_elements`] says how a line is split.
pub(super) fn forwarded_elements(headers: &HeaderMap) -> Vec<Option<&str>> {
    let mut elements = Vec::new();
    for line in header_lines(headers, &FORWARDED).unwrap_or_default() {
        forwarded_line_elements(line, &mut elements);
    }
    elements
}

/// The `n`-th (from 1) item from the right of `items`.
pub(super) fn nth_from_right<T: Copy>(items: &[T], n: usize) -> Option<T> {
    items.get(items.len().checked_sub(n)?).copied()
}

/// How a piece of a `Forwarded` line (the text between two commas, or an end of the line)
/// parses, from an element's start or from inside a quoted string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    /// Only whitespace, from an element's start: an empty list element.
    Empty,
    /// Ends outside a quoted string with every pair well-formed: an element can end here.
    Complete,
    /// Well-formed so far and ends inside a quoted string (or after its backslash): the comma
    /// that follows belongs to the string.
    InString,
    /// Breaks the grammar.
    Invalid,
}

/// Where [`parse_piece`] stands inside a `Forwarded` element.
#[derive(Clone, Copy)]
enum At {
    /// Before a pair's name: at the element's start, or after a `;`.
    PairStart,
    Name,
    /// After a name and whitespace, before its `=`.
    AfterName,
    /// After `=`, before the value.
    ValueStart,
    /// In an unquoted value.
    Token,
    /// In a quoted string.
    Quoted,
    /// After a backslash in a quoted string.
    Escaped,
    /// After a value and whitespace, before a `;` or the element's end.
    AfterValue,
}

/// Parses one comma-free `piece` of a `Forwarded` line as the grammar of an element goes on,
/// starting at the element's start or (`in_string`) inside a quoted string that an earlier
/// piece opened.
///
/// The grammar is RFC 7239's, `[pair] *(";" [pair])` with `pair = token "=" value` and
/// `value = token / quoted-string`, made lenient where proxies are known to be sloppy and a
/// client gains nothing: whitespace around `;` and `=`, and an unquoted value may hold any
/// visible character but `"`, `\`, `;` and `,` (`for=[2001:db8::1]:80`). What stays strict
/// is what the split relies on: outside a quoted string a `"` may only open a value and a
/// `\` never occurs.
fn parse_piece(piece: &str, in_string: bool) -> Piece {
    let is_tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    let is_ows = |b: u8| b == b' ' || b == b'\t';
    let mut at = if in_string { At::Quoted } else { At::PairStart };
    let mut empty = !in_string;
    for b in piece.bytes() {
        empty &= is_ows(b);
        at = match (at, b) {
            (At::Escaped, _) => At::Quoted,
            (At::Quoted, b'\\') => At::Escaped,
            (At::Quoted, b'"') => At::AfterValue,
            (At::Quoted, _) => At::Quoted,
            (At::PairStart | At::AfterValue, b';') => At::PairStart,
            (At::PairStart, b) if is_tchar(b) => At::Name,
            (At::Name, b) if is_tchar(b) => At::Name,
            (At::Name | At::AfterName, b'=') => At::ValueStart,
            (At::ValueStart, b'"') => At::Quoted,
            (At::ValueStart | At::Token, b) if !b"\"\\;, \t".contains(&b) => At::Token,
            (At::Token, b';') => At::PairStart,
            (At::PairStart | At::ValueStart | At::AfterValue, b) if is_ows(b) => at,
            (At::Name | At::AfterName, b) if is_ows(b) => At::AfterName,
            (At::Token, b) if is_ows(b) => At::AfterValue,
            _ => return Piece::Invalid,
        };
    }
    match at {
        _ if empty => Piece::Empty,
        At::PairStart | At::Token | At::AfterValue => Piece::Complete,
        At::Quoted | At::Escaped => Piece::InString,
        At::Name | At::AfterName | At::ValueStart => Piece::Invalid,
    }
}

/// Appends the elements of one `Forwarded` line to `elements`: `Some` for a well-formed
/// element, `None` for a malformed one.
///
/// The line is cut at every comma into pieces, which are then grouped from the right, the
/// end the proxies append to: a piece that is empty is skipped; one that is a whole
/// well-formed element is one; one that closes a quoted string opened to its left is joined
/// with the pieces back to the nearest one that opens it, when the joined text is one
/// well-formed element (`host="a,b"`); anything else (an unbalanced quote above all) is one
/// malformed element on its own. Quoted strings never span lines.
///
/// Why from the right: each piece is parsed from an element's start and from inside a
/// string, and since outside a string `"` only opens a value and `\` never occurs, the two
/// parses see every quote toggle the other way, so no piece both opens and continues a
/// string, nor is both a whole element and the end of a longer one. The pieces of the
/// well-formed elements at the right end of a line, the ones proxies appended, are therefore
/// grouped as written whatever a client put to their left: a client's `for="9.9.9.9` costs
/// only its own element. Each piece is parsed twice, and a search for an opener crosses only
/// pieces that continue a string, up to the first that does not, which a later search (from
/// a closing piece further left) never passes: the split takes linear time whatever the line.
fn forwarded_line_elements<'a>(line: &'a str, elements: &mut Vec<Option<&'a str>>) {
    // (byte range, parse from an element's start, parse inside a string) of each piece.
    let mut pieces = Vec::new();
    let mut start = 0;
    for piece in line.split(',') {
        let end = start + piece.len();
        pieces.push((
            start..end,
            parse_piece(piece, false),
            parse_piece(piece, true),
        ));
        start = end + 1;
    }
    let first_new = elements.len();
    let mut end = pieces.len();
    while let Some(last) = end.checked_sub(1) {
        let (ref last_range, alone, in_string) = pieces[last];
        end = last;
        match alone {
            Piece::Empty => continue,
            Piece::Complete => {
                elements.push(Some(trim_ows(&line[last_range.clone()])));
                continue;
            }
            Piece::InString | Piece::Invalid => {}
        }
        let mut opener = None;
        if in_string == Piece::Complete {
            for (index, (_, alone, in_string)) in pieces[..last].iter().enumerate().rev() {
                if *alone == Piece::InString {
                    opener = Some(index);
                    break;
                }
                if *in_string != Piece::InString {
                    break;
                }
            }
        }
        match opener {
            Some(first) => {
                elements.push(Some(trim_ows(&line[pieces[first].0.start..last_range.end])));
                end = first;
            }
            None => elements.push(None),
        }
    }
    // Grouped from the right: put this line's elements back in order.
    elements[first_new..].reverse();
}

/// `text` split at each `separator` outside a quoted string (backslash escapes honoured).
/// Used only inside an element [`forwarded_line_elements`] found well-formed, whose quotes
/// balance.
fn split_unquoted(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, c) in current.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                c if c == separator && !quoted => {
                    rest = Some(&current[i + c.len_utf8()..]);
                    return Some(&current[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(current)
    })
}

/// The `for=` node of one well-formed `Forwarded` element (`for=...;proto=...;by=...`),
/// unquoted.
pub(super) fn forwarded_for(element: &str) -> Option<String> {
    let value = split_unquoted(element, ';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim().eq_ignore_ascii_case("for").then(|| value.trim())
    })?;
    match value.strip_prefix('"') {
        Some(quoted) => {
            let inner = quoted.strip_suffix('"')?;
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                out.push(if c == '\\' { chars.next()? } else { c });
            }
            Some(out)
        }
        None => Some(value.to_owned()),
    }
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:8080`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:8080`. Anything else (`unknown`, an obfuscated `_node`)
/// is not an address.
pub(super) fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(bracketed) = node.strip_prefix('[') {
        let (v6, after) = bracketed.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return port_ok
            .then(|| v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6))
            .flatten();
    }
    let (v4, port) = node.split_once(':')?;
    if !is_port(port) {
        return None;
    }
    v4.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

/// A port as RFC 7239 allows one: decimal digits (or an obfuscated `_port`, which names no
/// port but does not invalidate the address).
fn is_port(port: &str) -> bool {
    !port.is_empty()
        && (port.bytes().all(|b| b.is_ascii_digit())
            || (port.starts_with('_')
                && port[1..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_pieces_parse_from_both_states() {
        use Piece::{Complete, Empty, InString, Invalid};
        for (piece, alone, in_string) in [
            ("", Empty, InString),
            (" \t", Empty, InString),
            (";", Complete, InString),
            ("for=1.1.1.1", Complete, InString),
            (" for = \"[::1]:80\" ; proto=http ;", Complete, Invalid),
            ("for=\"a", InString, Invalid),
            ("for=\"a\\", InString, Invalid),
            ("a\";b=c", Invalid, Complete),
            ("a=\";b=c", InString, Complete),
            ("x\";a=\"y", Invalid, InString),
            ("\"", Invalid, Complete),
            ("for", Invalid, InString),
            ("for=", Invalid, InString),
            ("for=a\"", Invalid, Complete),
            ("for=a\\", Invalid, InString),
            ("f r=1", Invalid, InString),
        ] {
            assert_eq!(parse_piece(piece, false), alone, "{piece:?} alone");
            assert_eq!(parse_piece(piece, true), in_string, "{piece:?} in a string");
        }
    }

    #[test]
    fn forwarded_lines_group_from_the_right() {
        let elements = |line| {
            let mut elements = Vec::new();
            forwarded_line_elements(line, &mut elements);
            elements
        };
        assert_eq!(elements(""), Vec::<Option<&str>>::new());
        assert_eq!(elements(" , ,"), Vec::<Option<&str>>::new());
        assert_eq!(
            elements(r#"for=1, x="a,b", "#),
            [Some("for=1"), Some(r#"x="a,b""#)]
        );
        // An opener on the left does not take the proxy's quoted comma: the nearest one does.
        assert_eq!(
            elements(r#"for=9;x=", for=1;e=";a=b, c""#),
            [None, Some(r#"for=1;e=";a=b, c""#)]
        );
        assert_eq!(
            elements(r#"a="1, b="2, c=3"#),
            [None, None, Some("c=3")],
            "an opener that nothing closes"
        );
        assert_eq!(elements(r#"a="1,2,3", b"#), [Some(r#"a="1,2,3""#), None]);
    }
}
