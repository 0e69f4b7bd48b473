//! Coverage-over-time plots (SVG) from the measured runs.

use std::fmt::Write as _;

use crate::fuzzers::Fuzzer;
use crate::report::{runs, spread, yardstick, yardstick_name, Measured};
use crate::targets::Target;

/// One fuzzer's curve: (minute, median, min, max) over its seeds.
type Curve = Vec<(u64, f64, f64, f64)>;

/// Per fuzzer with runs on `target`, its curve over `minutes`; and the highest value met.
fn curves(target: &Target, all: &[Measured], minutes: u64) -> (Vec<(Fuzzer, Curve)>, f64) {
    let mut series = Vec::new();
    let mut y_max = 1.0_f64;
    for fuzzer in Fuzzer::ALL {
        let runs = runs(all, target, fuzzer);
        if runs.is_empty() {
            continue;
        }
        let mut points = vec![(0u64, 0.0, 0.0, 0.0)];
        for minute in 1..=minutes {
            // A run's value at a minute is its last measured point up to that minute.
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|m| {
                    m.points
                        .iter()
                        .rev()
                        .find(|p| p.minute <= minute)
                        .map(|p| yardstick(target, &p.coverage) as f64)
                })
                .collect();
            if let Some(s) = spread(&values) {
                y_max = y_max.max(s.max);
                points.push((minute, s.median, s.min, s.max));
            }
        }
        series.push((fuzzer, points));
    }
    (series, y_max)
}

/// Coverage over time on one target: per fuzzer the median over seeds, with the min–max band.
pub fn plot(target: &Target, all: &[Measured], secs: u64) -> String {
    let (width, height, left, right, top, bottom) = (720.0, 400.0, 70.0, 150.0, 30.0, 50.0);
    let minutes = secs.div_ceil(60).max(1);
    let (series, y_max) = curves(target, all, minutes);
    let x = |minute: u64| left + (width - left - right) * minute as f64 / minutes as f64;
    let y = |value: f64| height - bottom - (height - top - bottom) * value / (y_max * 1.05);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        svg,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"18\" \
         font-size=\"14\">{}: {} covered over time (median of seeds, band min–max)</text>",
        target.name,
        yardstick_name(target)
    );
    // Axes with a few ticks.
    let _ = writeln!(
        svg,
        "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/>\n<line \
         x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{0}\" stroke=\"black\"/>",
        height - bottom,
        width - right
    );
    for i in 0..=4u32 {
        let value = y_max * 1.05 * f64::from(i) / 4.0;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{value:.0}</text>",
            left - 6.0,
            y(value) + 4.0
        );
    }
    let mut ticks: Vec<u64> = (0..=4u64).map(|i| minutes * i / 4).collect();
    ticks.dedup();
    for minute in ticks {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{minute}</text>",
            x(minute),
            height - bottom + 16.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">minutes</text>",
        (left + width - right) / 2.0,
        height - 12.0
    );
    for (i, (fuzzer, points)) in series.iter().enumerate() {
        let colour = fuzzer.colour();
        let upper: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.3)))
            .collect();
        let lower: Vec<String> = points
            .iter()
            .rev()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.2)))
            .collect();
        let _ = writeln!(
            svg,
            "<polygon points=\"{} {}\" fill=\"{colour}\" fill-opacity=\"0.15\" stroke=\"none\"/>",
            upper.join(" "),
            lower.join(" ")
        );
        let line: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>",
            line.join(" ")
        );
        let legend_y = top + 20.0 * i as f64 + 10.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{0}\" y1=\"{legend_y}\" x2=\"{1}\" y2=\"{legend_y}\" stroke=\"{colour}\" \
             stroke-width=\"3\"/><text x=\"{2}\" y=\"{3}\">{4}</text>",
            width - right + 10.0,
            width - right + 30.0,
            width - right + 36.0,
            legend_y + 4.0,
            fuzzer.name()
        );
    }
    svg.push_str("</svg>\n");
    svg
}
