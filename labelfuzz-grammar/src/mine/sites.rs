//! One function, several nonterminals, where the target says so.
//!
//! A function can parse different things for different callers: serde_json's `parse_ident`
//! reads `ull` after an `n`, `alse` after an `f` and `rue` after a `t`. One nonterminal for it
//! would let every caller take every alternative (`nalse`). So each invocation's name carries
//! the call site it came from ([`at_site`]), and [`merge_checked`] merges the sites of a function
//! the way Mimid does: when a subtree from one site, put in place of a subtree from the other
//! (and the other way round), leaves both inputs accepted. Sites that fail the swap stay
//! separate nonterminals (`parse_ident#1`, `parse_ident#2`...); a function whose sites all merge
//! keeps its plain name.

use std::collections::HashMap;

use super::induce::Accepts;
use super::tree::{Invocation, Node, Trace};

/// Separates a function's name from its call site in an invocation's name.
const SITE_MARK: char = '#';

/// Instances of a site tried in each swap check.
const SWAPS_PER_CHECK: usize = 2;

/// The name of an invocation of `function` called from `site`.
#[must_use]
pub fn at_site(function: &str, site: usize) -> String {
    format!("{function}{SITE_MARK}{site:x}")
}

/// The function an invocation's name (from [`at_site`], or a merged name) belongs to.
#[must_use]
pub fn function_of(name: &str) -> &str {
    name.rsplit_once(SITE_MARK)
        .map_or(name, |(function, _)| function)
}

/// What each invocation name becomes once sites are merged.
#[derive(Debug, Default)]
pub struct Names {
    merged: HashMap<String, String>,
}

impl Names {
    /// The nonterminal name for the invocation name `name` (a site never seen while merging
    /// is its function's plain name).
    #[must_use]
    pub fn of(&self, name: &str) -> String {
        self.merged
            .get(name)
            .cloned()
            .unwrap_or_else(|| function_of(name).to_owned())
    }

    /// `trace` with its invocations renamed.
    #[must_use]
    pub fn rename(&self, trace: &Trace) -> Trace {
        Trace {
            input: trace.input.clone(),
            invocations: trace
                .invocations
                .iter()
                .map(|invocation| Invocation {
                    function: self.of(&invocation.function),
                    parent: invocation.parent,
                })
                .collect(),
            owners: trace.owners.clone(),
        }
    }
}

/// Where one node of one tree is: the tree's index and the node's span.
type Instance = (usize, (usize, usize));

/// Merges the call sites of each function whose subtrees swap between inputs (`trees[i]` is
/// the tree of `traces[i]`); returns the names and the target runs the checks took.
pub fn merge_checked(trees: &[Node], traces: &[Trace], accepts: Accepts<'_>) -> (Names, usize) {
    // Every site's first instances, and each function's sites in order of appearance.
    let mut instances: HashMap<&str, Vec<Instance>> = HashMap::new();
    let mut sites_of: Vec<(&str, Vec<&str>)> = Vec::new();
    for (index, tree) in trees.iter().enumerate() {
        for node in tree.nodes().into_iter().skip(1) {
            let seen = instances.entry(node.name.as_str()).or_default();
            if seen.is_empty() {
                let function = function_of(&node.name);
                match sites_of.iter_mut().find(|(f, _)| *f == function) {
                    Some((_, sites)) => sites.push(&node.name),
                    None => sites_of.push((function, vec![&node.name])),
                }
            }
            if seen.len() < SWAPS_PER_CHECK {
                seen.push((index, node.span()));
            }
        }
    }
    let mut names = Names::default();
    let mut checks = 0;
    for (function, sites) in sites_of {
        // Union-find over the function's sites.
        let mut group: Vec<usize> = (0..sites.len()).collect();
        for later in 1..sites.len() {
            for earlier in 0..later {
                if root(&mut group, earlier) == root(&mut group, later) {
                    continue;
                }
                let (swappable, runs) = swappable(
                    &instances[sites[earlier]],
                    &instances[sites[later]],
                    traces,
                    accepts,
                );
                checks += runs;
                if swappable {
                    let (a, b) = (root(&mut group, earlier), root(&mut group, later));
                    group[b] = a;
                }
            }
        }
        let roots: Vec<usize> = (0..sites.len()).map(|i| root(&mut group, i)).collect();
        // The groups in order of first appearance, numbered from 1 when there are several.
        let mut groups: Vec<usize> = Vec::new();
        for &root in &roots {
            if !groups.contains(&root) {
                groups.push(root);
            }
        }
        for (site, root) in sites.iter().zip(&roots) {
            let name = match groups.iter().position(|group| group == root) {
                Some(index) if groups.len() > 1 => format!("{function}{SITE_MARK}{}", index + 1),
                _ => function.to_owned(),
            };
            names.merged.insert((*site).to_owned(), name);
        }
    }
    (names, checks)
}

/// The representative of `at`'s group in a union-find forest (halving the path on the way).
fn root(group: &mut [usize], mut at: usize) -> usize {
    while group[at] != at {
        group[at] = group[group[at]];
        at = group[at];
    }
    at
}

/// Whether the subtrees of two sites can stand in for each other: each instance pair swapped
/// both ways leaves both inputs accepted. Returns the answer and the runs it took.
fn swappable(
    first: &[Instance],
    second: &[Instance],
    traces: &[Trace],
    accepts: Accepts<'_>,
) -> (bool, usize) {
    let mut runs = 0;
    for (&(a, span_a), &(b, span_b)) in first.iter().zip(second) {
        let (input_a, input_b) = (&traces[a].input, &traces[b].input);
        for (into, span, from, from_span) in [
            (input_a, span_a, input_b, span_b),
            (input_b, span_b, input_a, span_a),
        ] {
            let mut swapped = into[..span.0].to_vec();
            swapped.extend_from_slice(&from[from_span.0..from_span.1]);
            swapped.extend_from_slice(&into[span.1..]);
            runs += 1;
            if accepts(&swapped).is_none() {
                return (false, runs);
            }
        }
    }
    (true, runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::tree::{parse_trees, Invocation};

    /// `value` called from `site`, reading `word` after the byte before it.
    fn ident_trace(first: u8, rest: &[u8], site: usize) -> Trace {
        let mut input = vec![first];
        input.extend_from_slice(rest);
        let mut owners = vec![Some(0)];
        owners.extend(std::iter::repeat_n(Some(1), rest.len()));
        Trace {
            input,
            invocations: vec![
                Invocation {
                    function: at_site("value", 0),
                    parent: None,
                },
                Invocation {
                    function: at_site("ident", site),
                    parent: Some(0),
                },
            ],
            owners,
        }
    }

    fn names_for(accepted: &[&[u8]]) -> (Names, usize) {
        let traces = vec![
            ident_trace(b'n', b"ull", 0x10),
            ident_trace(b't', b"rue", 0x20),
        ];
        let (trees, _) = parse_trees(&traces);
        let mut accepts = |input: &[u8]| {
            accepted
                .contains(&input)
                .then(|| ident_trace(input[0], &input[1..], 0))
        };
        merge_checked(&trees, &traces, &mut accepts)
    }

    #[test]
    fn sites_whose_subtrees_do_not_swap_stay_apart() {
        let (names, checks) = names_for(&[b"null", b"true"]);
        assert_eq!(names.of(&at_site("ident", 0x10)), "ident#1");
        assert_eq!(names.of(&at_site("ident", 0x20)), "ident#2");
        assert_eq!(names.of(&at_site("value", 0)), "value");
        assert_eq!(checks, 1, "the first swap already fails");
    }

    #[test]
    fn sites_whose_subtrees_swap_are_one_nonterminal() {
        let (names, checks) = names_for(&[b"null", b"true", b"nrue", b"tull"]);
        assert_eq!(names.of(&at_site("ident", 0x10)), "ident");
        assert_eq!(names.of(&at_site("ident", 0x20)), "ident");
        assert_eq!(names.of(&at_site("ident", 0x30)), "ident", "an unseen site");
        assert_eq!(checks, 2);
    }
}
