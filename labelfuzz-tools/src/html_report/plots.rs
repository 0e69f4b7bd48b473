//! The report's plots: SVG drawn by the `plotters` crate, embedded in the page as it is.

use plotters::prelude::*;

/// One line of a plot: its name and its (time, value) points.
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// Points in time order.
    pub points: Vec<(f64, f64)>,
}

/// Colours of the lines, in order (distinct in print and for common colour blindness).
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
];

/// A line plot of `series` over time as an SVG document, titled `title`, its y axis named
/// `y_label`. `id` names the `<svg>` element, so that the page (and its test) can find it.
pub fn line_plot(id: &str, title: &str, y_label: &str, series: &[Series]) -> String {
    let mut svg = String::new();
    let drawn = draw(&mut svg, title, y_label, series);
    if let Err(e) = drawn {
        return format!("<p class=\"error\">plot {title} not drawn: {e}</p>");
    }
    // plotters writes a bare <svg ...>: give it the id (the first tag is the root element).
    svg.replacen("<svg ", &format!("<svg id=\"{id}\" "), 1)
}

fn draw(
    svg: &mut String,
    title: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(svg, (760, 320)).into_drawing_area();
    root.fill(&WHITE)?;
    let points = || series.iter().flat_map(|s| s.points.iter());
    let x_max = points().map(|p| p.0).fold(1.0_f64, f64::max);
    let y_max = points().map(|p| p.1).fold(1.0_f64, f64::max) * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc(y_label)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for (index, line) in series.iter().enumerate() {
        let colour = PALETTE[index % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                colour.stroke_width(2),
            ))?
            .label(line.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour));
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_is_one_svg_element_with_its_id_and_legend() {
        let series = [
            Series {
                name: "labels".into(),
                points: vec![(0.0, 1.0), (2.0, 10.0), (4.0, 12.0)],
            },
            Series {
                name: "edges".into(),
                points: vec![(0.0, 1.0), (2.0, 7.0), (4.0, 8.0)],
            },
        ];
        let svg = line_plot("growth", "Growth", "count", &series);
        assert!(svg.starts_with("<svg id=\"growth\" "), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("labels") && svg.contains("edges"));
        assert!(svg.contains("<polyline"), "lines are drawn");
    }
}
