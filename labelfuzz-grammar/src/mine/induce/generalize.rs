//! Generalising what an input's bytes are: the class of bytes the target accepts in place of
//! each (parsed alike), literal runs, and repeated parts that become lists — each step checked
//! by running the target.

use super::*;

impl Inducer<'_> {
    /// The ASCII bytes the target accepts in place of the byte at `at`.
    fn accepted_bytes(&mut self, instance: &Instance, at: usize) -> Vec<u8> {
        let original = self.inputs[instance.input][at];
        let mut set = Vec::new();
        for byte in 0..=127u8 {
            if byte == original || {
                let candidate = self.edited(instance, at, at + 1, &[byte]);
                self.parsed_alike(instance.input, &candidate)
            } {
                set.push(byte);
            }
        }
        if !set.contains(&original) {
            set.push(original);
            set.sort_unstable();
        }
        set
    }

    fn class_id(&mut self, name: &str, set: Vec<u8>) -> usize {
        if let Some(id) = self.rules.classes.iter().position(|(_, c)| *c == set) {
            return id;
        }
        self.rules.classes.push((name.to_owned(), set));
        self.rules.classes.len() - 1
    }

    /// Bytes to classes and runs; returns the items with the instance's spans to match.
    pub(super) fn classify(
        &mut self,
        name: &str,
        items: &[Item],
        instance: Instance,
    ) -> (Vec<Item>, Instance) {
        let sets: Vec<Option<Vec<u8>>> = items
            .iter()
            .zip(&instance.spans)
            .map(|(item, span)| match item {
                Item::Byte(_) => Some(self.accepted_bytes(&instance, span.0)),
                _ => None,
            })
            .collect();
        let mut out_items = Vec::new();
        let mut out_spans = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let Some(set) = sets[i].as_ref().filter(|set| set.len() > 1) else {
                i = self.literal_run(name, items, &instance, i, &mut out_items, &mut out_spans);
                continue;
            };
            let mut class = set.clone();
            let mut end = i + 1;
            while let (Some(Item::Byte(here)), Some(Some(next))) = (items.get(end), sets.get(end)) {
                let Item::Byte(previous) = items[end - 1] else {
                    break;
                };
                if next.len() < 2 || !next.contains(&previous) || !class.contains(here) {
                    break;
                }
                class.retain(|b| next.contains(b));
                end += 1;
            }
            let run = &items[i..end];
            if !run
                .iter()
                .all(|item| matches!(item, Item::Byte(b) if class.contains(b)))
            {
                class = set.clone();
                end = i + 1;
            }
            let (from, to) = (instance.spans[i].0, instance.spans[end - 1].1);
            let many = self.runs_repeat(&instance, from, to, &class);
            let id = self.class_id(name, class);
            if many {
                out_items.push(Item::Class {
                    class: id,
                    many: true,
                });
                out_spans.push((from, to));
            } else {
                for k in i..end {
                    out_items.push(Item::Class {
                        class: id,
                        many: false,
                    });
                    out_spans.push(instance.spans[k]);
                }
            }
            i = end;
        }
        let instance = Instance {
            input: instance.input,
            spans: out_spans,
        };
        (out_items, instance)
    }

    /// Copies `items[i]`, or the run of one byte that starts there (`"   "`) as a run of
    /// that byte if the target takes one and three more; returns where the next item starts.
    fn literal_run(
        &mut self,
        name: &str,
        items: &[Item],
        instance: &Instance,
        i: usize,
        out_items: &mut Vec<Item>,
        out_spans: &mut Vec<(usize, usize)>,
    ) -> usize {
        let Item::Byte(byte) = items[i] else {
            out_items.push(items[i].clone());
            out_spans.push(instance.spans[i]);
            return i + 1;
        };
        let end = i + items[i..]
            .iter()
            .take_while(|item| **item == Item::Byte(byte))
            .count();
        let (from, to) = (instance.spans[i].0, instance.spans[end - 1].1);
        if self.runs_repeat(instance, from, to, &[byte]) {
            let class = self.class_id(name, vec![byte]);
            out_items.push(Item::Class { class, many: true });
            out_spans.push((from, to));
        } else {
            out_items.extend_from_slice(&items[i..end]);
            out_spans.extend_from_slice(&instance.spans[i..end]);
        }
        end
    }

    /// Whether one byte of `class`, and a run three longer, are accepted at `from..to`.
    fn runs_repeat(&mut self, instance: &Instance, from: usize, to: usize, class: &[u8]) -> bool {
        let one = [self.inputs[instance.input][from]];
        let long: Vec<u8> = (0..to - from + 3)
            .map(|k| class[(k * 7 + 1) % class.len()])
            .collect();
        if to - from > 1 {
            let short_input = self.edited(instance, from, to, &one);
            if !self.check(&short_input) {
                return false;
            }
        }
        let long_input = self.edited(instance, from, to, &long);
        self.check(&long_input)
    }

    /// Finds repeated parts in `alternative`, checks them, and returns the alternatives that
    /// result (the repetition as a nonterminal, and the form without it).
    pub(super) fn find_repeats(
        &mut self,
        name: &str,
        alternative: (Vec<Item>, Instance),
    ) -> Vec<(Vec<Item>, Instance)> {
        let mut done = Vec::new();
        let mut work = vec![alternative];
        while let Some((items, instance)) = work.pop() {
            if done.len() + work.len() > 16 {
                done.push((items, instance));
                continue;
            }
            match self.repeat_in(name, &items, &instance) {
                Some(split) => work.extend(split),
                None => done.push((items, instance)),
            }
        }
        done
    }

    /// The first repetition in `items` the target confirms, as two alternatives.
    fn repeat_in(
        &mut self,
        name: &str,
        items: &[Item],
        instance: &Instance,
    ) -> Option<[(Vec<Item>, Instance); 2]> {
        let n = items.len();
        for unit in 1..=LONGEST_UNIT {
            for separator in 0..=LONGEST_SEPARATOR {
                for start in 0..n {
                    let step = unit + separator;
                    if start + unit + step > n {
                        break;
                    }
                    let first = &items[start..start + unit];
                    if !first.iter().any(|item| !matches!(item, Item::Byte(_))) {
                        continue;
                    }
                    let mut end = start + unit;
                    while end + step <= n
                        && items[end + separator..end + step] == *first
                        && items[end..end + separator]
                            == items[start + unit..start + unit + separator]
                    {
                        end += step;
                    }
                    if end == start + unit {
                        continue;
                    }
                    if let Some(split) =
                        self.confirm_repeat(name, items, instance, start + unit, end, step)
                    {
                        return Some(split);
                    }
                }
            }
        }
        None
    }

    /// Checks that the repetitions at `items[from..to]` (each `step` items) can be left out and
    /// repeated twice more.
    fn confirm_repeat(
        &mut self,
        name: &str,
        items: &[Item],
        instance: &Instance,
        from: usize,
        to: usize,
        step: usize,
    ) -> Option<[(Vec<Item>, Instance); 2]> {
        let region = (instance.spans[from].0, instance.spans[to - 1].1);
        let last = self.inputs[instance.input][instance.spans[to - step].0..region.1].to_vec();
        let without = self.edited(instance, region.0, region.1, &[]);
        if !self.check(&without) {
            return None;
        }
        let mut more = last.clone();
        more.extend_from_slice(&last);
        let with_more = self.edited(instance, region.1, region.1, &more);
        if !self.check(&with_more) {
            return None;
        }
        let unit = items[to - step..to].to_vec();
        let repeat = match self.rules.repeats.iter().position(|(_, u)| *u == unit) {
            Some(index) => index,
            None => {
                self.rules.repeats.push((name.to_owned(), unit));
                self.rules.repeats.len() - 1
            }
        };
        let mut repeated = items[..from].to_vec();
        repeated.push(Item::Repeat(repeat));
        repeated.extend_from_slice(&items[to..]);
        let mut spans = instance.spans[..from].to_vec();
        spans.push(region);
        spans.extend_from_slice(&instance.spans[to..]);
        let repeated_instance = Instance {
            input: instance.input,
            spans,
        };
        let mut bare = items[..from].to_vec();
        bare.extend_from_slice(&items[to..]);
        let removed = region.1 - region.0;
        let mut spans = instance.spans[..from].to_vec();
        spans.extend(
            instance.spans[to..]
                .iter()
                .map(|&(a, b)| (a - removed, b - removed)),
        );
        self.inputs.push(without);
        let bare_instance = Instance {
            input: self.inputs.len() - 1,
            spans,
        };
        Some([(repeated, repeated_instance), (bare, bare_instance)])
    }
}
