#include "report/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace perfsim::report {
namespace {

// Colour-blind-safe palette (Okabe and Ito 2008), then greys.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                    "#D55E00", "#F0E442", "#000000", "#999999", "#666666"};

const char* colour(std::size_t series) {
  return kPalette[series % std::size(kPalette)];
}

// Geometry shared by both charts, in SVG pixels.
constexpr double kWidth = 1100;
constexpr double kLabelWidth = 230;  // row labels left of the plot
constexpr double kPlotLeft = kLabelWidth + 10;
constexpr double kPlotRight = 820;  // notes right of the plot
constexpr double kRowHeight = 22;
constexpr double kRowGap = 6;
constexpr double kLegendHeight = 28;
constexpr double kAxisHeight = 42;

std::string number(double value, const char* format = "%.1f") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string tick_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Legend entries left to right from the plot's left edge, wrapping before the chart's right
// edge; each as wide as its text (about 7 px per character at 12 px sans-serif).
struct LegendPlace {
  double x = 0;
  int row = 0;
};
std::vector<LegendPlace> legend_places(const std::vector<std::string>& series) {
  std::vector<LegendPlace> places;
  double x = kPlotLeft;
  int row = 0;
  for (const std::string& name : series) {
    const double width = 16 + 7 * static_cast<double>(name.size()) + 20;
    if (x > kPlotLeft && x + width > kWidth) {
      x = kPlotLeft;
      ++row;
    }
    places.push_back({x, row});
    x += width;
  }
  return places;
}

std::string legend(const std::vector<std::string>& series, double top) {
  std::string out;
  const std::vector<LegendPlace> places = legend_places(series);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const double x = places[i].x;
    const double y = top + places[i].row * 18;
    out += "<rect x=\"" + number(x) + "\" y=\"" + number(y) +
           "\" width=\"12\" height=\"12\" fill=\"" + colour(i) + "\"/>";
    out += "<text x=\"" + number(x + 16) + "\" y=\"" + number(y + 10) + "\">" +
           html_escape(series[i]) + "</text>";
  }
  return out;
}

double legend_height(const std::vector<std::string>& series) {
  const std::vector<LegendPlace> places = legend_places(series);
  return kLegendHeight + 18 * (places.empty() ? 0 : places.back().row);
}

// The value axis under the plot: ticks, grid lines up through the rows, and its name.
std::string value_axis(const std::vector<double>& ticks, double axis_max, double top, double bottom,
                       const std::string& label, const AxisUnit& unit) {
  std::string out;
  for (double tick : ticks) {
    const double x = kPlotLeft + (kPlotRight - kPlotLeft) * tick / axis_max;
    out += "<line x1=\"" + number(x) + "\" y1=\"" + number(top) + "\" x2=\"" + number(x) +
           "\" y2=\"" + number(bottom) + "\" stroke=\"#ddd\"/>";
    out += "<text x=\"" + number(x) + "\" y=\"" + number(bottom + 14) +
           "\" text-anchor=\"middle\">" + tick_text(tick) + "</text>";
  }
  out += "<line x1=\"" + number(kPlotLeft) + "\" y1=\"" + number(bottom) + "\" x2=\"" +
         number(kPlotRight) + "\" y2=\"" + number(bottom) + "\" stroke=\"#333\"/>";
  out += "<text x=\"" + number((kPlotLeft + kPlotRight) / 2) + "\" y=\"" + number(bottom + 32) +
         "\" text-anchor=\"middle\" class=\"axis\">" + html_escape(label) + " (" +
         html_escape(unit.name) + ")</text>";
  return out;
}

std::string svg_open(const std::string& title, double height) {
  return "<svg role=\"img\" width=\"" + number(kWidth) + "\" height=\"" + number(height) +
         "\" viewBox=\"0 0 " + number(kWidth) + " " + number(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\"><title>" + html_escape(title) + "</title>";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double max_value, int target_ticks) {
  if (!(max_value > 0) || !std::isfinite(max_value))
    max_value = 1;
  const double raw_step = max_value / std::max(1, target_ticks - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = 10 * magnitude;
  for (double factor : {1.0, 2.0, 5.0}) {
    if (factor * magnitude >= raw_step) {
      step = factor * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  const int count = static_cast<int>(std::ceil(max_value / step - 1e-9));
  for (int i = 0; i <= count; ++i)
    ticks.push_back(i * step);
  return ticks;
}

std::string svg_stacked_bars(const StackedBarChart& chart) {
  double max_value = chart.reference.value_or(0) / chart.unit.base_per_unit;
  for (const StackedBarRow& row : chart.rows) {
    double total = 0;
    for (double value : row.values)
      total += std::max(0.0, value);
    max_value = std::max(max_value, total / chart.unit.base_per_unit);
  }
  const std::vector<double> ticks = nice_ticks(max_value);
  const double axis_max = ticks.back();
  const double legend_bottom = legend_height(chart.series) + (chart.reference ? 16 : 0);
  const double rows_bottom =
      legend_bottom + static_cast<double>(chart.rows.size()) * (kRowHeight + kRowGap);
  std::string out = svg_open(chart.title, rows_bottom + kAxisHeight + 4);
  out += legend(chart.series, 6);
  out += value_axis(ticks, axis_max, legend_bottom - 4, rows_bottom, chart.value_label, chart.unit);
  const double scale = (kPlotRight - kPlotLeft) / axis_max / chart.unit.base_per_unit;
  for (std::size_t r = 0; r < chart.rows.size(); ++r) {
    const StackedBarRow& row = chart.rows[r];
    const double y = legend_bottom + static_cast<double>(r) * (kRowHeight + kRowGap);
    out += "<text x=\"" + number(kLabelWidth) + "\" y=\"" + number(y + kRowHeight * 0.7) +
           "\" text-anchor=\"end\">" + html_escape(row.label) + "</text>";
    double x = kPlotLeft;
    for (std::size_t s = 0; s < row.values.size(); ++s) {
      const double width = std::max(0.0, row.values[s]) * scale;
      if (width <= 0)
        continue;
      const std::string series = s < chart.series.size() ? chart.series[s] : "";
      out += "<rect class=\"bar\" x=\"" + number(x, "%.2f") + "\" y=\"" + number(y) +
             "\" width=\"" + number(width, "%.2f") + "\" height=\"" + number(kRowHeight) +
             "\" fill=\"" + colour(s) + "\"><title>" + html_escape(row.label) + ": " +
             html_escape(series) + " " + number(row.values[s] / chart.unit.base_per_unit, "%.3f") +
             " " + html_escape(chart.unit.name) + "</title></rect>";
      x += width;
    }
    if (!row.note.empty())
      out += "<text x=\"" + number(std::max(x, kPlotRight) + 6) + "\" y=\"" +
             number(y + kRowHeight * 0.7) + "\">" + html_escape(row.note) + "</text>";
  }
  if (chart.reference) {
    const double x = kPlotLeft + *chart.reference * scale;
    out += "<line class=\"reference\" x1=\"" + number(x) + "\" y1=\"" + number(legend_bottom - 8) +
           "\" x2=\"" + number(x) + "\" y2=\"" + number(rows_bottom) +
           "\" stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>";
    out += "<text x=\"" + number(x + 4) + "\" y=\"" + number(legend_bottom - 10) +
           "\" fill=\"#c00\">" + html_escape(chart.reference_label) + "</text>";
  }
  return out + "</svg>";
}

std::string svg_gantt(const GanttChart& chart) {
  double max_value = 0;
  for (const GanttLane& lane : chart.lanes)
    for (const GanttBar& bar : lane.bars)
      max_value = std::max(max_value, bar.end / chart.unit.base_per_unit);
  const std::vector<double> ticks = nice_ticks(max_value, 10);
  const double axis_max = ticks.back();
  const double legend_bottom = legend_height(chart.series);
  const double rows_bottom =
      legend_bottom + static_cast<double>(chart.lanes.size()) * (kRowHeight + kRowGap);
  std::string out = svg_open(chart.title, rows_bottom + kAxisHeight + 4);
  out += legend(chart.series, 6);
  out += value_axis(ticks, axis_max, legend_bottom - 4, rows_bottom, chart.time_label, chart.unit);
  const double scale = (kPlotRight - kPlotLeft) / axis_max / chart.unit.base_per_unit;
  for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
    const GanttLane& lane = chart.lanes[l];
    const double y = legend_bottom + static_cast<double>(l) * (kRowHeight + kRowGap);
    out += "<text x=\"" + number(kLabelWidth) + "\" y=\"" + number(y + kRowHeight * 0.7) +
           "\" text-anchor=\"end\">" + html_escape(lane.label) + "</text>";
    for (const GanttBar& bar : lane.bars) {
      const double x = kPlotLeft + bar.start * scale;
      const double width = std::max(0.5, (bar.end - bar.start) * scale);
      out += "<g class=\"step\"><rect x=\"" + number(x, "%.2f") + "\" y=\"" + number(y) +
             "\" width=\"" + number(width, "%.2f") + "\" height=\"" + number(kRowHeight) +
             "\" fill=\"" + colour(bar.series) + "\" stroke=\"#fff\" stroke-width=\"0.5\"><title>" +
             html_escape(bar.tooltip) + "</title></rect>";
      // About 7 px per digit at 12 px sans-serif.
      if (!bar.text.empty() && width >= 7.0 * static_cast<double>(bar.text.size()) + 4)
        out += "<text x=\"" + number(x + width / 2, "%.2f") + "\" y=\"" +
               number(y + kRowHeight * 0.7) + "\" text-anchor=\"middle\" fill=\"#fff\">" +
               html_escape(bar.text) + "</text>";
      out += "</g>";
    }
  }
  return out + "</svg>";
}

}  // namespace perfsim::report
