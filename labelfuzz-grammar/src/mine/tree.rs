//! From a recorded execution to a parse tree: each input byte belongs to the function invocation
//! that read it last, and the invocations' nesting is the tree's.

use std::collections::{HashMap, HashSet};

/// One function invocation of a recorded execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The function's name.
    pub function: String,
    /// The invocation it was called from (`None`: called from outside the target).
    pub parent: Option<usize>,
}

/// One execution of the mining build: the input, the invocations in the order they began, and
/// for every input byte the invocation that read it last (`None` if no instrumented code did).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The input.
    pub input: Vec<u8>,
    /// The invocations; an invocation's parent comes before it.
    pub invocations: Vec<Invocation>,
    /// `owners[i]`: the index in `invocations` of the last reader of `input[i]`.
    pub owners: Vec<Option<usize>>,
}

impl Trace {
    /// The trace with the invocations of every function `hidden` names taken out: what they
    /// read belongs to their nearest kept caller, and what they called is called from there.
    /// A Rust parser's bytes pass through library code (`Iterator::next`, slice indexing,
    /// `Option::copied`) instantiated in the parser's crate; that code is not the parser's
    /// structure.
    #[must_use]
    pub fn without(&self, hidden: impl Fn(&str) -> bool) -> Trace {
        // `kept_as[i]`: the index invocation `i`'s reads and calls go to (`None`: the root).
        let mut kept_as: Vec<Option<usize>> = Vec::with_capacity(self.invocations.len());
        let mut invocations = Vec::new();
        for (index, invocation) in self.invocations.iter().enumerate() {
            let parent = invocation
                .parent
                .filter(|&p| p < index)
                .and_then(|p| kept_as[p]);
            if hidden(&invocation.function) {
                kept_as.push(parent);
            } else {
                kept_as.push(Some(invocations.len()));
                invocations.push(Invocation {
                    function: invocation.function.clone(),
                    parent,
                });
            }
        }
        let owners = self
            .owners
            .iter()
            .map(|owner| owner.and_then(|o| kept_as.get(o).copied().flatten()))
            .collect();
        Trace {
            input: self.input.clone(),
            invocations,
            owners,
        }
    }

    /// The trace with every byte no instrumented code read given to the reader of the byte
    /// before it: a scanner that copies a run of bytes out with `memcpy` (serde_json finding a
    /// string's end eight bytes at a time) reads them in uninstrumented code, yet the run is
    /// what it consumed.
    #[must_use]
    pub fn with_unread_bytes_to_the_reader_before(mut self) -> Trace {
        for at in 1..self.owners.len() {
            if self.owners[at].is_none() {
                self.owners[at] = self.owners[at - 1];
            }
        }
        self
    }
}

/// A node of a parse tree: a function invocation and what it read, in input order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The function (`start` for the root).
    pub name: String,
    /// Its parts, ordered by input position; their spans do not overlap.
    pub parts: Vec<Part>,
}

/// A part of a [`Node`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// The input byte at this index.
    Byte(usize),
    /// A nested invocation.
    Node(Node),
}

impl Part {
    /// The input positions `[from, to)` the part spans.
    #[must_use]
    pub fn span(&self) -> (usize, usize) {
        match self {
            Part::Byte(i) => (*i, i + 1),
            Part::Node(node) => node.span(),
        }
    }
}

impl Node {
    /// The input positions `[from, to)` the node spans (its parts are never empty).
    #[must_use]
    pub fn span(&self) -> (usize, usize) {
        // Down the first parts for the start and the last parts for the end: asking each part
        // for its whole span would walk both edges of every subtree, exponential in the depth
        // (a parser recursing once per element nests a node per element).
        let mut first = self;
        let from = loop {
            match first.parts.first() {
                None => break 0,
                Some(Part::Byte(i)) => break *i,
                Some(Part::Node(node)) => first = node,
            }
        };
        let mut last = self;
        let to = loop {
            match last.parts.last() {
                None => break 0,
                Some(Part::Byte(i)) => break i + 1,
                Some(Part::Node(node)) => last = node,
            }
        };
        (from, to)
    }

    /// Every node of the tree, this one first (depth first, in input order).
    #[must_use]
    pub fn nodes(&self) -> Vec<&Node> {
        let mut out = vec![self];
        let mut i = 0;
        while i < out.len() {
            let node = out[i];
            out.extend(node.parts.iter().filter_map(|part| match part {
                Part::Node(child) => Some(child),
                Part::Byte(_) => None,
            }));
            i += 1;
        }
        out
    }
}

/// The parse trees of `traces`. Functions that only ever read one byte and call nothing that
/// reads (`peek`, `expect`, `next_char`) are *transparent*: their byte belongs to their caller,
/// so the grammar keeps the byte where the caller's rule needs it instead of a nonterminal
/// whose alternatives are every character any caller peeked at.
/// Returns the trees and the transparent functions (to build more trees alike with [`build`]).
/// Transparency is found inside out: `expect` that reads its byte through `peek` is one byte
/// once `peek` is.
#[must_use]
pub fn parse_trees(traces: &[Trace]) -> (Vec<Node>, HashSet<String>) {
    let mut transparent = HashSet::new();
    loop {
        let trees: Vec<Node> = traces
            .iter()
            .map(|trace| build(trace, &transparent))
            .collect();
        let more = transparent_functions(&trees);
        if more.is_empty() {
            return (trees, transparent);
        }
        transparent.extend(more);
    }
}

/// Removes from the innermost node called `name` that spans `from..to` its parts inside
/// `from..to` (and the node itself, if nothing is left); false if there is no such node.
pub fn remove_span(node: &mut Node, name: &str, from: usize, to: usize) -> bool {
    for part in &mut node.parts {
        if let Part::Node(child) = part {
            let (a, b) = child.span();
            if a <= from && to <= b && remove_span(child, name, from, to) {
                node.parts
                    .retain(|part| !matches!(part, Part::Node(child) if child.parts.is_empty()));
                return true;
            }
        }
    }
    if node.name != name {
        return false;
    }
    let before = node.parts.len();
    node.parts.retain(|part| {
        let (a, b) = part.span();
        !(from <= a && b <= to)
    });
    node.parts.len() < before
}

/// The tree's shape without its bytes: names and nesting, one `.` a byte. Two inputs parsed
/// alike have the same shape.
#[must_use]
pub fn shape(node: &Node) -> String {
    let mut out = String::new();
    write_shape(node, &mut out);
    out
}

fn write_shape(node: &Node, out: &mut String) {
    out.push_str(&node.name);
    out.push('(');
    for part in &node.parts {
        match part {
            Part::Byte(_) => out.push('.'),
            Part::Node(child) => write_shape(child, out),
        }
    }
    out.push(')');
}

/// The functions whose every invocation in `trees` is one byte and nothing else.
fn transparent_functions(trees: &[Node]) -> HashSet<String> {
    let mut single: HashMap<&str, bool> = HashMap::new();
    for tree in trees {
        for node in tree.nodes().into_iter().skip(1) {
            let one_byte = matches!(node.parts.as_slice(), [Part::Byte(_)]);
            *single.entry(node.name.as_str()).or_insert(true) &= one_byte;
        }
    }
    single
        .into_iter()
        .filter(|&(_, one)| one)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The tree of one trace: a root `start` over the invocations called from outside the target
/// and the bytes nothing read; a root with one invocation and nothing else becomes that
/// invocation, renamed `start`.
#[must_use]
pub fn build(trace: &Trace, transparent: &HashSet<String>) -> Node {
    let count = trace.invocations.len();
    // Children of each invocation, the root's at index `count`.
    let mut children: Vec<Vec<Child>> = vec![Vec::new(); count + 1];
    for (index, invocation) in trace.invocations.iter().enumerate() {
        let parent = invocation.parent.filter(|&p| p < index).unwrap_or(count);
        children[parent].push(Child::Invocation(index));
    }
    for (position, owner) in trace.owners.iter().enumerate() {
        let owner = owner.filter(|&o| o < count).unwrap_or(count);
        children[owner].push(Child::Byte(position));
    }
    let builder = Builder {
        trace,
        children: &children,
        transparent,
    };
    let parts = builder.parts(count);
    match parts.as_slice() {
        [Part::Node(only)] => Node {
            name: "start".into(),
            parts: only.parts.clone(),
        },
        _ => Node {
            name: "start".into(),
            parts,
        },
    }
}

/// What an invocation directly holds before the tree is built.
#[derive(Clone, Copy, Debug)]
enum Child {
    Byte(usize),
    Invocation(usize),
}

struct Builder<'t> {
    trace: &'t Trace,
    children: &'t [Vec<Child>],
    transparent: &'t HashSet<String>,
}

impl Builder<'_> {
    /// The parts of invocation `index` (the root at `trace.invocations.len()`), in input order.
    fn parts(&self, index: usize) -> Vec<Part> {
        let mut parts = Vec::new();
        for child in &self.children[index] {
            match *child {
                Child::Byte(position) => parts.push(Part::Byte(position)),
                Child::Invocation(inner) => {
                    let inner_parts = self.parts(inner);
                    if inner_parts.is_empty() {
                        continue;
                    }
                    let name = &self.trace.invocations[inner].function;
                    if self.transparent.contains(name) {
                        parts.extend(inner_parts);
                    } else {
                        parts.push(Part::Node(Node {
                            name: name.clone(),
                            parts: inner_parts,
                        }));
                    }
                }
            }
        }
        untangle(parts)
    }
}

/// Orders parts by position; where two overlap (an invocation whose bytes are not contiguous,
/// because another one read some in between last), the wider node gives up its own level and
/// its parts join this one, until none overlap.
fn untangle(mut parts: Vec<Part>) -> Vec<Part> {
    loop {
        parts.sort_by_key(|part| part.span());
        let clash = parts
            .windows(2)
            .position(|pair| pair[0].span().1 > pair[1].span().0);
        let Some(at) = clash else {
            return parts;
        };
        let width = |part: &Part| part.span().1 - part.span().0;
        let wider = if width(&parts[at]) >= width(&parts[at + 1]) {
            at
        } else {
            at + 1
        };
        if let Part::Node(node) = parts.remove(wider) {
            parts.extend(node.parts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(function: &str, parent: Option<usize>) -> Invocation {
        Invocation {
            function: function.into(),
            parent,
        }
    }

    fn shape(node: &Node, input: &[u8]) -> String {
        let inner: String = node
            .parts
            .iter()
            .map(|part| match part {
                Part::Byte(i) => char::from(input[*i]).to_string(),
                Part::Node(child) => shape(child, input),
            })
            .collect();
        format!("{}({inner})", node.name)
    }

    #[test]
    fn the_span_of_a_deep_chain_of_single_calls_takes_one_walk() {
        // 64 invocations each calling the next, the innermost reading byte 3: asked of both
        // ends at every level, the span took 2^64 steps.
        let mut node = Node {
            name: "f63".into(),
            parts: vec![Part::Byte(3)],
        };
        for level in (0..63).rev() {
            node = Node {
                name: format!("f{level}"),
                parts: vec![Part::Node(node)],
            };
        }
        assert_eq!(node.span(), (3, 4));
        let wider = Node {
            name: "start".into(),
            parts: vec![Part::Byte(2), Part::Node(node), Part::Byte(4)],
        };
        assert_eq!(wider.span(), (2, 5));
    }

    #[test]
    fn the_nesting_of_last_readers_is_the_tree() {
        // expr(term(number(12)) + term(number(3))), with `peek` reading the `+`.
        let trace = Trace {
            input: b"12+3".to_vec(),
            invocations: vec![
                invocation("harness", None),
                invocation("expr", Some(0)),
                invocation("term", Some(1)),
                invocation("number", Some(2)),
                invocation("peek", Some(1)),
                invocation("term", Some(1)),
                invocation("number", Some(5)),
            ],
            owners: vec![Some(3), Some(3), Some(4), Some(6)],
        };
        let (trees, _) = parse_trees(std::slice::from_ref(&trace));
        assert_eq!(
            shape(&trees[0], &trace.input),
            "start(expr(term(number(12))+term(number(3))))"
        );
    }

    #[test]
    fn hidden_functions_give_their_bytes_and_calls_to_their_caller() {
        // number reads its digits through `next` (library code); `next` calls `get`.
        let trace = Trace {
            input: b"12".to_vec(),
            invocations: vec![
                invocation("main", None),
                invocation("next", Some(0)),
                invocation("number", Some(0)),
                invocation("next", Some(2)),
                invocation("get", Some(3)),
                invocation("next", Some(2)),
            ],
            owners: vec![Some(4), Some(5)],
        };
        let kept = trace.without(|name| name == "next");
        assert_eq!(
            kept.invocations,
            vec![
                invocation("main", None),
                invocation("number", Some(0)),
                invocation("get", Some(1)),
            ]
        );
        assert_eq!(kept.owners, vec![Some(2), Some(1)]);
    }

    #[test]
    fn bytes_nobody_read_go_to_the_reader_before_them() {
        let trace = Trace {
            input: b"a\"xyz\"".to_vec(),
            invocations: vec![invocation("string", None), invocation("scan", Some(0))],
            owners: vec![None, Some(0), Some(1), None, None, Some(0)],
        };
        let filled = trace.with_unread_bytes_to_the_reader_before();
        assert_eq!(
            filled.owners,
            vec![None, Some(0), Some(1), Some(1), Some(1), Some(0)]
        );
    }

    #[test]
    fn bytes_read_out_of_order_never_cross_a_sibling() {
        // `a` read bytes 0 and 2 last, `b` byte 1: `a` cannot be one contiguous node.
        let trace = Trace {
            input: b"xyz".to_vec(),
            invocations: vec![
                invocation("main", None),
                invocation("a", Some(0)),
                invocation("b", Some(0)),
            ],
            owners: vec![Some(1), Some(2), Some(1)],
        };
        let (trees, _) = parse_trees(&[trace.clone(), trace.clone()]);
        assert_eq!(shape(&trees[0], &trace.input), "start(xyz)");
    }
}
