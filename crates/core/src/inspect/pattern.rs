//! `pattern` in a requested schema: ECMA-262 regular expressions (JSON Schema's dialect,
//! with the `u` flag as JSON Schema validators such as Ajv compile them), on the `regress`
//! engine, at a bounded cost.
//!
//! Owns: compiling a pattern once ([`EcmaPattern::compile`]) and matching an answer with it
//! ([`EcmaPattern::test`]). `regress` is a backtracking engine without a step limit, so the
//! cost is bounded before it runs:
//! - a pattern is at most [`MAX_PATTERN_BYTES`];
//! - patterns whose backtracking can be exponential are refused: a repeated group that itself
//!   holds a choice — an alternation or a repetition of variable count — when the outer
//!   repetition is unbounded (`(a+)+`, `(a|ab)*`, `(a{1,3})+`) or may run more than
//!   [`MAX_AMBIGUOUS_REPEAT`] times (`(a|a){1,64}`: every character doubles the work), or when
//!   such a repetition is itself repeated again (`((a|b){2}){8}`); and a backreference inside
//!   a repeated group. A group whose every pass must read a character its repetitions cannot
//!   (`([a-z0-9-]+\.)+`, `(\.[a-z]+)*`: a host name's dots) splits the subject one way only
//!   and is not refused;
//! - what remains backtracks at most polynomially, about `n^(q+1)` steps for a subject of
//!   `n` characters and `q` unbounded repetitions; a subject is tested only when
//!   `n^(q+1)` stays under [`STEP_BUDGET`], else the answer fails closed (too costly to
//!   check). E-mail-like patterns (`q` = 3) accept subjects of up to 100 characters.
//!
//! Never: runs a pattern on a subject whose bound it has not computed.

/// Longest pattern accepted.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// Most times a group holding a choice may be repeated (`(a|b){1,8}`: at most 2^8 paths).
pub const MAX_AMBIGUOUS_REPEAT: u32 = 8;

/// Backtracking steps a single test may cost, as estimated above.
pub const STEP_BUDGET: f64 = 1e8;

/// Why a pattern is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not an ECMA-262 pattern (with the `u` flag).
    Invalid,
    /// Longer than [`MAX_PATTERN_BYTES`].
    TooLong,
    /// Exponential backtracking is possible.
    Exponential,
}

/// A compiled pattern and the bound of what it may be run on.
pub struct EcmaPattern {
    regex: regress::Regex,
    /// Unbounded repetitions (`*`, `+`, `{n,}`), for the cost estimate.
    unbounded: u32,
}

impl std::fmt::Debug for EcmaPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EcmaPattern")
            .field("unbounded", &self.unbounded)
            .finish_non_exhaustive()
    }
}

impl EcmaPattern {
    pub fn compile(pattern: &str) -> Result<EcmaPattern, Refused> {
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(Refused::TooLong);
        }
        let shape = Shape::of(pattern).ok_or(Refused::Invalid)?;
        let regex = regress::Regex::with_flags(pattern, "u").map_err(|_| Refused::Invalid)?;
        if shape.exponential {
            return Err(Refused::Exponential);
        }
        Ok(EcmaPattern {
            regex,
            unbounded: shape.unbounded,
        })
    }

    /// The longest subject (in characters) this pattern is run on.
    pub fn max_subject(&self) -> usize {
        let degree = f64::from(self.unbounded + 1);
        let n = STEP_BUDGET.powf(1.0 / degree).floor();
        // Bounded by construction: STEP_BUDGET^(1/1) is the largest value.
        n as usize
    }

    /// Does `subject` match (anywhere, as ECMA-262 `RegExp.prototype.test`)? `None` when the
    /// subject is too long to test at a bounded cost.
    pub fn test(&self, subject: &str) -> Option<bool> {
        if subject.chars().count() > self.max_subject() {
            return None;
        }
        Some(self.regex.find(subject).is_some())
    }
}

/// What a scan of the pattern's syntax found.
#[derive(Debug, Default)]
struct Shape {
    unbounded: u32,
    exponential: bool,
}

/// The characters an atom can read: ASCII as a bitmap, anything else as one flag (two sets
/// that both may read non-ASCII are never disjoint: the check stays conservative).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct CharSet {
    ascii: u128,
    other: bool,
}

impl CharSet {
    const ALL: CharSet = CharSet {
        ascii: u128::MAX,
        other: true,
    };

    fn of(c: char) -> CharSet {
        if c.is_ascii() {
            CharSet {
                ascii: 1u128 << (c as u32),
                other: false,
            }
        } else {
            CharSet {
                ascii: 0,
                other: true,
            }
        }
    }

    fn range(lo: char, hi: char) -> CharSet {
        if !hi.is_ascii() || !lo.is_ascii() {
            return CharSet::ALL;
        }
        let mut set = CharSet::default();
        for c in (lo as u32)..=(hi as u32) {
            set.ascii |= 1u128 << c;
        }
        set
    }

    fn union(self, other: CharSet) -> CharSet {
        CharSet {
            ascii: self.ascii | other.ascii,
            other: self.other || other.other,
        }
    }

    fn disjoint(self, other: CharSet) -> bool {
        self.ascii & other.ascii == 0 && !(self.other && other.other)
    }

    /// What the escape `\c` reads (outside or inside a class).
    fn escape(c: char) -> CharSet {
        match c {
            'd' => CharSet::range('0', '9'),
            'w' => CharSet::range('a', 'z')
                .union(CharSet::range('A', 'Z'))
                .union(CharSet::range('0', '9'))
                .union(CharSet::of('_')),
            's' => [' ', '\t', '\n', '\r', '\x0b', '\x0c'].into_iter().fold(
                CharSet {
                    ascii: 0,
                    other: true,
                },
                |s, c| s.union(CharSet::of(c)),
            ),
            'n' => CharSet::of('\n'),
            't' => CharSet::of('\t'),
            'r' => CharSet::of('\r'),
            'f' => CharSet::of('\x0c'),
            'v' => CharSet::of('\x0b'),
            c if c.is_ascii_punctuation() => CharSet::of(c),
            _ => CharSet::ALL,
        }
    }

    /// What the class `[…]` in `chars[start..end]` reads; negated classes read anything.
    fn class(chars: &[char], start: usize, end: usize) -> CharSet {
        let body = &chars[start + 1..end - 1];
        if body.first() == Some(&'^') {
            return CharSet::ALL;
        }
        let mut set = CharSet::default();
        let mut i = 0;
        while i < body.len() {
            let (item, next) = if body[i] == '\\' {
                match body.get(i + 1) {
                    Some(e) => (Err(CharSet::escape(*e)), i + 2),
                    None => return CharSet::ALL,
                }
            } else {
                (Ok(body[i]), i + 1)
            };
            match item {
                Ok(lo) if body.get(next) == Some(&'-') && next + 1 < body.len() => {
                    let hi = body[next + 1];
                    if hi == '\\' {
                        return CharSet::ALL;
                    }
                    set = set.union(CharSet::range(lo, hi));
                    i = next + 2;
                }
                Ok(c) => {
                    set = set.union(CharSet::of(c));
                    i = next;
                }
                Err(escaped) => {
                    set = set.union(escaped);
                    i = next;
                }
            }
        }
        set
    }
}

/// One open group during the scan.
#[derive(Debug, Default)]
struct Group {
    has_unbounded: bool,
    has_alternation: bool,
    /// A repetition whose count varies (`?`, `{1,3}`, `*`): a choice, like an alternation.
    has_variable: bool,
    /// A group holding a choice, repeated: its paths multiply already.
    has_ambiguous_repeat: bool,
    has_backref: bool,
    /// Everything the group (or plain atom) can read.
    reads: CharSet,
    /// What its repetitions of variable count can read.
    repeated: CharSet,
    /// Single characters every pass must read, at the group's own level (`\.` in
    /// `([a-z]+\.)`).
    delimiters: Vec<CharSet>,
    /// A plain atom of one character whose set was pushed as a delimiter of the enclosing
    /// group (withdrawn if a quantifier makes it optional or repeated).
    delimiter: bool,
}

impl Group {
    /// Every pass must read a character its repetitions cannot: passes split the subject
    /// one way only, whatever the repetitions inside do.
    fn delimited(&self) -> bool {
        !self.has_alternation
            && !self.has_ambiguous_repeat
            && !self.has_backref
            && self.delimiters.iter().any(|d| d.disjoint(self.repeated))
    }

    /// A plain atom of one character reading `reads`, found at this group's level: it reads
    /// into the group and is one of its delimiters until a quantifier says otherwise.
    fn add_atom(&mut self, reads: CharSet) -> Group {
        self.reads = self.reads.union(reads);
        self.delimiters.push(reads);
        Group {
            reads,
            delimiter: true,
            ..Group::default()
        }
    }

    /// Holds a choice point that backtracking may revisit.
    fn ambiguous(&self) -> bool {
        self.has_unbounded || self.has_alternation || self.has_variable
    }
}

impl Shape {
    /// Scans the pattern's structure (groups, classes, escapes, quantifiers); `None` when it
    /// is unbalanced (the engine refuses those anyway). Hand-written because `regress`
    /// exposes no syntax tree; it only has to find repetitions and groups.
    fn of(pattern: &str) -> Option<Shape> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut shape = Shape::default();
        let mut stack: Vec<Group> = vec![Group::default()];
        // The atom just ended: a closed group's facts, or a plain atom.
        let mut last: Option<Group> = None;
        let mut i = 0;
        // Capturing groups, and the highest numbered backreference: `regress` accepts a
        // reference to a group the pattern does not have, then panics when matching.
        let mut captures = 0usize;
        let mut highest_ref = 0usize;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '\\' => {
                    let next = chars.get(i + 1).copied()?;
                    let backref = next.is_ascii_digit() && next != '0' || next == 'k';
                    if next.is_ascii_digit() && next != '0' {
                        let digits: String = chars[i + 1..]
                            .iter()
                            .take_while(|d| d.is_ascii_digit())
                            .collect();
                        highest_ref = highest_ref.max(digits.parse().unwrap_or(usize::MAX));
                    }
                    if backref {
                        stack.last_mut()?.has_backref = true;
                    }
                    last = Some(if backref {
                        Group {
                            has_backref: true,
                            reads: CharSet::ALL,
                            ..Group::default()
                        }
                    } else if matches!(next, 'b' | 'B') {
                        // Assertions read nothing.
                        Group::default()
                    } else {
                        stack.last_mut()?.add_atom(CharSet::escape(next))
                    });
                    i += 2;
                    continue;
                }
                '[' => {
                    let end = class_end(&chars, i)?;
                    last = Some(stack.last_mut()?.add_atom(CharSet::class(&chars, i, end)));
                    i = end;
                    continue;
                }
                '(' => {
                    let named = chars.get(i + 1) == Some(&'?')
                        && chars.get(i + 2) == Some(&'<')
                        && !matches!(chars.get(i + 3), Some('=') | Some('!'));
                    if chars.get(i + 1) != Some(&'?') || named {
                        captures += 1;
                    }
                    stack.push(Group::default());
                    last = None;
                }
                ')' => {
                    let g = stack.pop()?;
                    if stack.is_empty() {
                        return None;
                    }
                    let parent = stack.last_mut()?;
                    parent.has_unbounded |= g.has_unbounded;
                    parent.has_alternation |= g.has_alternation;
                    parent.has_variable |= g.has_variable;
                    parent.has_ambiguous_repeat |= g.has_ambiguous_repeat;
                    parent.has_backref |= g.has_backref;
                    parent.reads = parent.reads.union(g.reads);
                    parent.repeated = parent.repeated.union(g.repeated);
                    last = Some(g);
                }
                '|' => {
                    stack.last_mut()?.has_alternation = true;
                    last = None;
                }
                '*' | '+' | '?' | '{' => {
                    let (count, end) = quantifier(&chars, i)?;
                    if let Some(atom) = last.take() {
                        let group = stack.last_mut()?;
                        let fixed = count.min >= 1 && count.max == Some(count.min);
                        if atom.delimiter && !fixed {
                            group.delimiters.pop();
                        }
                        if count.max.is_none_or(|max| max > count.min) {
                            group.repeated = group.repeated.union(atom.reads);
                        }
                        // A choice that every pass delimits backtracks polynomially.
                        let ambiguous = atom.ambiguous() && !atom.delimited();
                        let repeats = count.max.is_none_or(|max| max >= 2);
                        if atom.has_backref && repeats {
                            shape.exponential = true;
                        }
                        if repeats && atom.has_ambiguous_repeat {
                            shape.exponential = true;
                        }
                        let group = stack.last_mut()?;
                        match count.max {
                            None => {
                                shape.unbounded += 1;
                                if ambiguous {
                                    shape.exponential = true;
                                }
                                group.has_unbounded = true;
                            }
                            Some(max) => {
                                if repeats && ambiguous {
                                    if max > MAX_AMBIGUOUS_REPEAT {
                                        shape.exponential = true;
                                    }
                                    group.has_ambiguous_repeat = true;
                                }
                                if max > count.min {
                                    group.has_variable = true;
                                }
                            }
                        }
                    }
                    i = end;
                    continue;
                }
                // Anchors read nothing.
                '^' | '$' => last = Some(Group::default()),
                '.' => last = Some(stack.last_mut()?.add_atom(CharSet::ALL)),
                c => last = Some(stack.last_mut()?.add_atom(CharSet::of(c))),
            }
            i += 1;
        }
        (stack.len() == 1 && highest_ref <= captures).then_some(shape)
    }
}

/// The index after the character class starting at `start` (`[`).
fn class_end(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            ']' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// How many times a quantifier repeats its atom (`max: None`: unbounded).
#[derive(Debug, Clone, Copy)]
struct Count {
    min: u32,
    max: Option<u32>,
}

/// The quantifier at `i`, and the index after it (and after a lazy `?`). A `{` that is no
/// quantifier is a literal (Annex B), repeating nothing; counts too large to write are
/// unbounded.
fn quantifier(chars: &[char], i: usize) -> Option<(Count, usize)> {
    let number = |s: &str| s.trim().parse::<u32>().ok();
    let (count, mut end) = match chars[i] {
        '*' => (Count { min: 0, max: None }, i + 1),
        '+' => (Count { min: 1, max: None }, i + 1),
        '?' => (
            Count {
                min: 0,
                max: Some(1),
            },
            i + 1,
        ),
        _ => {
            let close = chars[i..].iter().position(|c| *c == '}').map(|p| i + p)?;
            let body: String = chars[i + 1..close].iter().collect();
            let count = match body.split_once(',') {
                Some((lo, hi)) if hi.trim().is_empty() => Count {
                    min: number(lo).unwrap_or(0),
                    max: None,
                },
                Some((lo, hi)) => Count {
                    min: number(lo).unwrap_or(0),
                    max: number(hi),
                },
                None => match number(&body) {
                    Some(n) => Count {
                        min: n,
                        max: Some(n),
                    },
                    // Not a quantifier: a literal `{`.
                    None => Count {
                        min: 1,
                        max: Some(1),
                    },
                },
            };
            (count, close + 1)
        }
    };
    if chars.get(end) == Some(&'?') {
        end += 1;
    }
    Some((count, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecmascript_syntax_compiles_and_matches() {
        let p = EcmaPattern::compile(r"^(?=.*\d)(?=.*[a-z]).{8,}$").expect("lookahead");
        assert_eq!(p.test("abcdefg1"), Some(true));
        assert_eq!(p.test("abcdefgh"), Some(false));
        let p = EcmaPattern::compile(r"^(?<y>\d{4})-\k<y>$").expect("named backreference");
        assert_eq!(p.test("2024-2024"), Some(true));
        let p = EcmaPattern::compile(r"^\p{Lu}").expect("unicode property");
        assert_eq!(p.test("Été"), Some(true));
        // ECMAScript `\d` is ASCII only, unlike the regex crate's.
        let p = EcmaPattern::compile(r"^\d+$").expect("digits");
        assert_eq!(p.test("١٢٣"), Some(false));
    }

    #[test]
    fn invalid_and_exponential_patterns_are_refused() {
        assert_eq!(EcmaPattern::compile("(").err(), Some(Refused::Invalid));
        // A reference to a group the pattern lacks (regress accepts it, then panics).
        assert_eq!(
            EcmaPattern::compile(r"^(?=/*\1d)555(?=.&*[a-z]).{8,64}$").err(),
            Some(Refused::Invalid)
        );
        assert!(EcmaPattern::compile(r"^(a)\1$").is_ok());
        assert_eq!(
            EcmaPattern::compile("(a+)+$").err(),
            Some(Refused::Exponential)
        );
        assert_eq!(
            EcmaPattern::compile("(a|ab)*c").err(),
            Some(Refused::Exponential)
        );
        assert_eq!(
            EcmaPattern::compile(r"((a)\2)*").err(),
            Some(Refused::Exponential)
        );
        assert_eq!(
            EcmaPattern::compile(&"a".repeat(MAX_PATTERN_BYTES + 1)).err(),
            Some(Refused::TooLong)
        );
        assert!(EcmaPattern::compile(r"^(\d{3}-)?\d{4}$").is_ok());
        assert!(EcmaPattern::compile(r"^[a-z]+(-[a-z]{2})*$").is_ok());
        // Bounded repetitions of a choice: exponential past a few rounds, or when nested.
        for exponential in [
            "^(a|a){1,64}$",
            "^(a|ab){9}$",
            "^(a?){20}a{20}$",
            "^(a{1,3}){1,20}$",
            "^(a{1,2})+$",
            "^((a|b){2}){3}$",
            "^((a|b){1,8}){1,8}$",
        ] {
            assert_eq!(
                EcmaPattern::compile(exponential).err(),
                Some(Refused::Exponential),
                "{exponential}"
            );
        }
        for bounded in [
            r"^(\d{1,3}\.){3}\d{1,3}$",
            r"^(\d{3}-){2}\d{4}$",
            "^(a|b){1,8}$",
            r"^[A-Z]{2}\d{2}( ?\d{4}){4}$",
            r"^\d{4}-\d{2}-\d{2}$",
        ] {
            assert!(EcmaPattern::compile(bounded).is_ok(), "{bounded}");
        }
    }

    #[test]
    fn a_pass_delimited_by_a_character_its_repetitions_cannot_read_is_polynomial() {
        // Host names and dotted names: each pass ends at a dot the repetitions cannot read.
        for delimited in [
            r"^([a-z0-9-]+\.)+[a-z]{2,}$",
            r"^[a-z0-9]+(\.[a-z0-9-]+)*$",
            r"^(a*b)*$",
            r"^([\w-]+@)+x$",
            r"^((a+\.)+b)+$",
        ] {
            assert!(EcmaPattern::compile(delimited).is_ok(), "{delimited}");
        }
        // The delimiter is readable by the repetition, optional, or one of alternatives.
        for ambiguous in [
            r"^(.+\.)+$",
            r"^([a-z.]+\.)+$",
            r"^(a+b?)+$",
            r"^(\w+\.?)+$",
            r"^((a|b)+\.)+$",
            r"^([^.]+\.)+$",
            r"^(a+a)+$",
        ] {
            assert_eq!(
                EcmaPattern::compile(ambiguous).err(),
                Some(Refused::Exponential),
                "{ambiguous}"
            );
        }
    }

    #[test]
    fn subjects_are_bounded_by_the_patterns_cost() {
        let email =
            EcmaPattern::compile(r"^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$").expect("e-mail");
        assert!(email.max_subject() >= 100);
        assert_eq!(email.test("user@example.com"), Some(true));
        assert_eq!(email.test(&"a".repeat(email.max_subject() + 1)), None);
        let polynomial = EcmaPattern::compile(r"^\d*\d*\d*\d*\d*x$").expect("polynomial");
        assert!(polynomial.max_subject() < 30);
        assert_eq!(
            polynomial.test(&"1".repeat(polynomial.max_subject())),
            Some(false)
        );
    }
}
