//! Line charts as SVG, drawn by the bench itself so that the pictures in
//! docs/contributing/benchmarks.md come from the same run as its tables. Pure: figures in, a
//! document out.
//!
//! Both axes are logarithmic. A cost that grows linearly with the cluster
//! is then a straight line of slope one, whatever its constant factor, so
//! "linear or worse" can be read off the picture, and the chart's dashed
//! guide line shows what slope one looks like.

use std::fmt::Write as _;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;
const COLOURS: [&str; 5] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

/// One line: a name for the legend and its points, `(x, y)`.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

impl Chart {
    /// The chart as a standalone SVG document. Points that a logarithmic
    /// axis cannot show (zero, negative, not finite) are left out; a chart
    /// with nothing to show still renders, with a note saying so.
    pub fn to_svg(&self) -> String {
        let series: Vec<Series> = self
            .series
            .iter()
            .map(|s| Series {
                name: s.name.clone(),
                points: s
                    .points
                    .iter()
                    .copied()
                    .filter(|&(x, y)| drawable(x) && drawable(y))
                    .collect(),
            })
            .collect();
        let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.clone()).collect();
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(
            svg,
            r##"<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{}</text>"#,
            LEFT + plot_width() / 2.0,
            escape(&self.title)
        );
        let Some(x_axis) = Axis::spanning(all.iter().map(|p| p.0)) else {
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="middle">no figures</text>"#,
                WIDTH / 2.0,
                HEIGHT / 2.0
            );
            svg.push_str("</svg>\n");
            return svg;
        };
        let Some(y_axis) = Axis::spanning(all.iter().map(|p| p.1)) else {
            svg.push_str("</svg>\n");
            return svg;
        };
        let place = |(x, y): (f64, f64)| {
            (
                LEFT + x_axis.fraction(x) * plot_width(),
                TOP + (1.0 - y_axis.fraction(y)) * plot_height(),
            )
        };
        draw_axes(&mut svg, &x_axis, &y_axis, &self.x_label, &self.y_label);
        draw_guide(&mut svg, &x_axis, &y_axis);
        for (i, s) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let path: Vec<String> = s
                .points
                .iter()
                .map(|&p| {
                    let (x, y) = place(p);
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for &p in &s.points {
                let (x, y) = place(p);
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"><title>{}: {} at {}</title></circle>"#,
                    escape(&s.name),
                    number(p.1),
                    number(p.0)
                );
            }
            let legend_y = TOP + 16.0 + 20.0 * i as f64;
            let legend_x = WIDTH - RIGHT + 16.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{legend_x}" y1="{legend_y}" x2="{}" y2="{legend_y}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
                legend_x + 20.0,
                legend_x + 26.0,
                legend_y + 4.0,
                escape(&s.name)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

fn drawable(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

fn plot_height() -> f64 {
    HEIGHT - TOP - BOTTOM
}

/// A logarithmic axis from one power-of-ten-ish bound to another.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Axis {
    low: f64,
    high: f64,
}

impl Axis {
    /// The smallest 1-2-5 bounds around every value; None without values.
    fn spanning(values: impl Iterator<Item = f64>) -> Option<Axis> {
        let (min, max) = values.fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })?;
        let mut low = step_at_or_below(min);
        let mut high = step_at_or_above(max);
        if high <= low {
            low = step_at_or_below(min / 2.0);
            high = step_at_or_above(max * 2.0);
        }
        Some(Axis { low, high })
    }

    /// Where `v` sits between the bounds, from 0 to 1.
    fn fraction(&self, v: f64) -> f64 {
        (v.ln() - self.low.ln()) / (self.high.ln() - self.low.ln())
    }

    /// Tick values: the 1-2-5 steps within the bounds, or only the powers of
    /// ten when the axis spans more than two decades.
    fn ticks(&self) -> Vec<f64> {
        let decades = (self.high / self.low).log10();
        let steps: &[f64] = if decades > 2.0 {
            &[1.0]
        } else {
            &[1.0, 2.0, 5.0]
        };
        let mut ticks = Vec::new();
        let mut decade = 10f64.powf(self.low.log10().floor());
        while decade <= self.high * 1.0001 {
            for step in steps {
                let tick = decade * step;
                if tick >= self.low * 0.9999 && tick <= self.high * 1.0001 {
                    ticks.push(tick);
                }
            }
            decade *= 10.0;
        }
        ticks
    }
}

/// The largest of 1, 2, 5 times a power of ten that is at most `v`.
fn step_at_or_below(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|s| s * decade)
        .find(|&s| s <= v * 1.0001)
        .unwrap_or(decade)
}

/// The smallest of 1, 2, 5 times a power of ten that is at least `v`.
fn step_at_or_above(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|s| s * decade)
        .find(|&s| s >= v * 0.9999)
        .unwrap_or(10.0 * decade)
}

fn draw_axes(svg: &mut String, x_axis: &Axis, y_axis: &Axis, x_label: &str, y_label: &str) {
    let (x0, y0) = (LEFT, TOP + plot_height());
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="#888888"/>"##,
        plot_width(),
        plot_height()
    );
    for tick in x_axis.ticks() {
        let x = LEFT + x_axis.fraction(tick) * plot_width();
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{y0}" stroke="#e0e0e0"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y0 + 16.0,
            number(tick)
        );
    }
    for tick in y_axis.ticks() {
        let y = TOP + (1.0 - y_axis.fraction(tick)) * plot_height();
        let _ = writeln!(
            svg,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_width(),
            x0 - 6.0,
            y + 4.0,
            number(tick)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + plot_width() / 2.0,
        HEIGHT - 14.0,
        escape(x_label)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + plot_height() / 2.0,
        escape(y_label)
    );
}

/// A dashed line of slope one through the plot's lower left corner: what
/// linear growth looks like on these axes.
fn draw_guide(svg: &mut String, x_axis: &Axis, y_axis: &Axis) {
    let (x_decades, y_decades) = (
        (x_axis.high / x_axis.low).log10(),
        (y_axis.high / y_axis.low).log10(),
    );
    // Along the guide, y rises as many decades as x does; clip at the top.
    let span = x_decades.min(y_decades);
    let (x1, y1) = (LEFT, TOP + plot_height());
    let x2 = LEFT + span / x_decades * plot_width();
    let y2 = TOP + (1.0 - span / y_decades) * plot_height();
    let _ = writeln!(
        svg,
        r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#aaaaaa" stroke-dasharray="6 4"><title>linear growth</title></line><text x="{:.1}" y="{:.1}" fill="#888888" font-size="10">linear</text>"##,
        x2 - 34.0,
        y2 + 14.0
    );
}

/// A figure as a tick or tooltip shows it: 100k, 2.5M, 0.02, 12.
fn number(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if v >= 1e6 {
        format!("{}M", trim(format!("{:.1}", v / 1e6)))
    } else if v >= 1e3 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.3}"))
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>) -> Chart {
        Chart {
            title: "RSS <after> convergence".into(),
            x_label: "sources".into(),
            y_label: "MiB".into(),
            series: vec![Series {
                name: "configmap-mirror".into(),
                points,
            }],
        }
    }

    #[test]
    fn axes_round_out_to_one_two_five_steps() {
        let axis = Axis::spanning([1000.0, 100_000.0].into_iter()).unwrap();
        assert_eq!((axis.low, axis.high), (1000.0, 100_000.0));
        assert_eq!(
            axis.ticks(),
            vec![
                1000.0, 2000.0, 5000.0, 10_000.0, 20_000.0, 50_000.0, 100_000.0
            ]
        );
        let axis = Axis::spanning([3.2, 47.0].into_iter()).unwrap();
        assert_eq!((axis.low, axis.high), (2.0, 50.0));
        let wide = Axis::spanning([0.5, 2_000.0].into_iter()).unwrap();
        assert_eq!(wide.ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
    }

    #[test]
    fn a_single_value_still_gets_an_axis_around_it() {
        let axis = Axis::spanning([7.0].into_iter()).unwrap();
        assert!(axis.low < 7.0 && axis.high > 7.0, "{axis:?}");
        assert!(Axis::spanning(std::iter::empty()).is_none());
    }

    #[test]
    fn points_land_inside_the_plot_in_order() {
        let svg = chart(vec![(1000.0, 20.0), (10_000.0, 40.0), (100_000.0, 300.0)]).to_svg();
        let points = svg
            .split("points=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        let placed: Vec<(f64, f64)> = points
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(placed.len(), 3);
        for &(x, y) in &placed {
            assert!((LEFT..=LEFT + plot_width()).contains(&x), "{x}");
            assert!((TOP..=TOP + plot_height()).contains(&y), "{y}");
        }
        // Rightwards and upwards (SVG's y grows downwards).
        assert!(placed[0].0 < placed[1].0 && placed[1].0 < placed[2].0);
        assert!(placed[0].1 > placed[1].1 && placed[1].1 > placed[2].1);
    }

    #[test]
    fn text_is_escaped_and_undrawable_points_are_left_out() {
        let svg = chart(vec![(0.0, 5.0), (1000.0, f64::NAN), (2000.0, 8.0)]).to_svg();
        assert!(svg.contains("RSS &lt;after&gt; convergence"));
        assert!(!svg.contains("<after>"));
        assert_eq!(svg.matches("<circle").count(), 1);
    }

    #[test]
    fn a_chart_without_figures_says_so() {
        let svg = chart(vec![]).to_svg();
        assert!(svg.contains("no figures"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(100_000.0), "100k");
        assert_eq!(number(2_500_000.0), "2.5M");
        assert_eq!(number(1500.0), "1.5k");
        assert_eq!(number(12.4), "12");
        assert_eq!(number(0.02), "0.02");
        assert_eq!(number(5.0), "5");
    }
}
