//! The pattern stage: generalizes each shrunk crash reproducer into its abstract failure
//! pattern ([`crate::pattern`]), writes it beside the reproducer (`<file>.pattern`) and into the
//! crash table (and so `summary.json`), and says which crash labels are the same bug.
//!
//! A variant that crashes with a signal or times out ends the process. The generalizers are
//! deterministic given the verdicts so far, so the verdicts are kept in the state
//! ([`PatternWork`]): after the restart the stage replays them without running anything, reads
//! the crash label of the variant that ended the process ([`LastCrash`]) and goes on.

use std::path::Path;
use std::sync::Arc;

use libafl::stages::Stage;
use libafl::Error;
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};

use crate::consider::{Considerer, ObservedExecutor, Run, RunFuzzer, RunState};
use crate::crashes::{CrashRecord, CrashTable, LastCrash};
use crate::grammar::GrammarInputs;
use crate::labels::Label;
use crate::output::OutputDir;
use crate::pattern::{
    generalize_bytes, generalize_grammar, generalize_typed, DebugForm, Pattern, Settings,
    TypedPattern,
};
use crate::shrink::Verdict;

/// The verdicts of the generalization under way.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PatternWork {
    label: Option<Label>,
    verdicts: Vec<bool>,
    /// A variant was running when the process last ended.
    pending: bool,
}

impl_serdeany!(PatternWork);

/// Finds the pattern of every shrunk crash reproducer that has none.
#[derive(Debug)]
pub struct PatternStage {
    considerer: Considerer,
    grammar: Option<Arc<GrammarInputs>>,
    debug_form: Option<DebugForm>,
    settings: Settings,
    out: OutputDir,
    quiet: bool,
}

impl PatternStage {
    /// A stage running variants with `considerer`, in grammar mode over `grammar`, with
    /// `settings` (a budget of 0 turns it off), writing pattern files under `out`. With
    /// `debug_form` (a typed target), byte patterns are also stated on the `Debug` form.
    #[must_use]
    pub fn new(
        considerer: Considerer,
        grammar: Option<Arc<GrammarInputs>>,
        debug_form: Option<DebugForm>,
        settings: Settings,
        out: OutputDir,
        quiet: bool,
    ) -> Self {
        PatternStage {
            considerer,
            grammar,
            debug_form,
            settings,
            out,
            quiet,
        }
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for PatternStage
where
    E: ObservedExecutor,
    S: RunState,
    Z: RunFuzzer<E, EM, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        if self.settings.budget == 0 {
            return Ok(());
        }
        let mut run = Run {
            fuzzer,
            executor,
            state,
            manager,
        };
        while !run.state.stop_requested() {
            let Some((label, reproducer)) = run.state.metadata::<CrashTable>()?.without_pattern()
            else {
                break;
            };
            let last_crash = run.state.metadata_or_insert_with(LastCrash::default).0;
            let work = run.state.metadata_or_insert_with(PatternWork::default);
            if work.label != Some(label) {
                *work = PatternWork {
                    label: Some(label),
                    ..PatternWork::default()
                };
            }
            if work.pending {
                // The process ended while this variant ran: by its crash, or by another one.
                work.verdicts.push(last_crash == Some(label));
                work.pending = false;
            }
            let Some(pattern) = self.generalize(&mut run, label, &reproducer)? else {
                break;
            };
            run.state.metadata_mut::<PatternWork>()?.label = None;
            self.keep(run.state, label, pattern)?;
        }
        Ok(())
    }
}

impl PatternStage {
    /// The pattern of `reproducer` (`None` when the run ended first).
    fn generalize<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        label: Label,
        reproducer: &[u8],
    ) -> Result<Option<Pattern>, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        let mut asked = 0;
        let mut failure = None;
        let considerer = &mut self.considerer;
        let mut run_variant = |variant: &[u8]| -> Verdict {
            asked += 1;
            let known = run
                .state
                .metadata::<PatternWork>()
                .ok()
                .and_then(|w| w.verdicts.get(asked - 1).copied());
            if let Some(shown) = known {
                return Verdict::from(shown);
            }
            if let Ok(work) = run.state.metadata_mut::<PatternWork>() {
                work.pending = true;
            }
            run.state.metadata_or_insert_with(LastCrash::default).0 = None;
            match considerer.probe(run, variant) {
                Ok(true) => {}
                Ok(false) => return Verdict::Stop,
                Err(e) => {
                    failure = Some(e);
                    return Verdict::Stop;
                }
            }
            let shown = run.state.metadata_or_insert_with(LastCrash::default).0 == Some(label);
            if let Ok(work) = run.state.metadata_mut::<PatternWork>() {
                work.pending = false;
                work.verdicts.push(shown);
            }
            Verdict::from(shown)
        };
        // For a typed pattern: every variant run, with whether it still showed the label.
        let mut variants: Vec<(Vec<u8>, bool)> = Vec::new();
        let keep_variants = self.debug_form.is_some();
        let mut test = |variant: &[u8]| -> Verdict {
            let verdict = run_variant(variant);
            if keep_variants && verdict != Verdict::Stop {
                variants.push((variant.to_vec(), verdict == Verdict::Accepted));
            }
            verdict
        };
        let pattern = match self.grammar.as_deref() {
            Some(grammar) => {
                let choices: Vec<u32> = reproducer.iter().map(|&b| u32::from(b)).collect();
                Pattern::Grammar(generalize_grammar(
                    grammar,
                    &choices,
                    &self.settings,
                    &mut test,
                ))
            }
            None => Pattern::Bytes(generalize_bytes(reproducer, &self.settings, &mut test)),
        };
        if let Some(e) = failure {
            return Err(e);
        }
        if run.state.stop_requested() {
            return Ok(None);
        }
        Ok(Some(match (pattern, self.debug_form) {
            (Pattern::Bytes(mut bytes), Some(debug_form)) => {
                bytes.typed = typed_pattern(debug_form, reproducer, &variants, &self.settings);
                Pattern::Bytes(bytes)
            }
            (pattern, _) => pattern,
        }))
    }

    /// Records `pattern` as `label`'s: in the crash table, beside the reproducer, on stderr.
    fn keep<S: RunState>(
        &self,
        state: &mut S,
        label: Label,
        pattern: Pattern,
    ) -> Result<(), Error> {
        let grammar = self.grammar.as_deref();
        let table = state.metadata_mut::<CrashTable>()?;
        let Some(record) = table.get(label).cloned() else {
            return Ok(());
        };
        let mut same = |pattern: &Pattern, other: &CrashRecord| {
            matches(grammar, pattern, &other.key)
                && other
                    .pattern
                    .as_ref()
                    .is_some_and(|theirs| matches(grammar, theirs, &record.key))
        };
        table.set_pattern(label, pattern.clone(), &mut same);
        let twins: Vec<String> = table
            .get(label)
            .map(|r| r.same_bug_as.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let file = format!("{}.pattern", record.file);
        let file = Path::new(&file);
        let text = serde_json::to_vec_pretty(&PatternFile {
            pattern: pattern.to_string(),
            typed: pattern.typed().map(ToString::to_string),
            crash: format!("{} {}", record.info.kind, record.info.location),
            same_bug_as: twins.clone(),
            details: &pattern,
        })
        .map_err(|e| Error::serialize(e.to_string()))?;
        if let Err(e) = self.out.write_atomic(file, &text) {
            crate::say!("labelfuzz: warning: {}: {e}", file.display());
        }
        if !self.quiet {
            let holes = match &pattern {
                Pattern::Grammar(p) => p
                    .tree
                    .holes()
                    .iter()
                    .map(|(symbol, shown, tried)| format!("{symbol} {shown}/{tried}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                Pattern::Bytes(_) => String::new(),
            };
            let layers = match &pattern {
                Pattern::Grammar(p) if !p.layers.is_empty() => format!(
                    "; {}",
                    p.layers
                        .iter()
                        .map(crate::pattern::Layer::describe)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => String::new(),
            };
            let twins = if twins.is_empty() {
                String::new()
            } else {
                format!("; the same bug as {}", twins.join(", "))
            };
            crate::say!(
                "labelfuzz: pattern of {} {}: {pattern} ({} executions{}{}{layers}{twins})",
                record.info.kind,
                record.info.location,
                pattern.probes(),
                if holes.is_empty() {
                    ""
                } else {
                    "; regenerations still failing: "
                },
                holes,
            );
            if let Some(typed) = pattern.typed() {
                crate::say!("labelfuzz:   as the target reads it (Debug): {typed}");
            }
        }
        Ok(())
    }
}

/// The pattern of a typed target's `reproducer` on its `Debug` form, from the byte
/// generalization's `variants` (`None` when the reproducer does not decode or its form does not
/// read as a `Debug` form).
fn typed_pattern(
    debug_form: DebugForm,
    reproducer: &[u8],
    variants: &[(Vec<u8>, bool)],
    settings: &Settings,
) -> Option<TypedPattern> {
    let form = debug_form(reproducer)?;
    let forms: Vec<(String, bool)> = variants
        .iter()
        .filter_map(|(variant, shown)| Some((debug_form(variant)?, *shown)))
        .collect();
    generalize_typed(
        &form,
        forms.iter().map(|(text, shown)| (text.as_str(), *shown)),
        settings,
    )
}

/// `<reproducer>.pattern`.
#[derive(Serialize)]
struct PatternFile<'p> {
    /// The pattern, as text.
    pattern: String,
    /// The pattern on the `Debug` form of a typed target's input.
    #[serde(skip_serializing_if = "Option::is_none")]
    typed: Option<String>,
    /// The crash's kind and site.
    crash: String,
    /// Crash labels that are the same bug.
    same_bug_as: Vec<String>,
    /// The pattern in full (for `--avoid` and `--only`).
    details: &'p Pattern,
}

/// Whether `pattern` matches the input `key` (choice bytes in grammar mode).
fn matches(grammar: Option<&GrammarInputs>, pattern: &Pattern, key: &[u8]) -> bool {
    match (pattern, grammar) {
        (Pattern::Bytes(p), None) => p.matches(key),
        (Pattern::Grammar(p), Some(grammar)) => {
            let choices: Vec<u32> = key.iter().map(|&b| u32::from(b)).collect();
            let (derived, tree) = grammar.derive_traced(&choices);
            p.matches(grammar, &tree, &derived.output)
        }
        _ => false,
    }
}
