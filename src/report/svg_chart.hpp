#pragma once
// Inline SVG charts for the HTML report (html_report.hpp): stacked horizontal bars (where the
// time goes, memory against capacity, communication per group kind, the planner's ranking) and
// a Gantt chart (the pipeline schedule). Values are given in their base unit (us, bytes) and
// drawn on an axis that names the unit it shows. Every label is escaped; the SVG holds no
// script and no external reference, so a report opens anywhere without a network.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::report {

// Text for HTML and SVG, element content and quoted attribute values alike: & < > " '.
std::string html_escape(std::string_view text);

// The unit an axis shows and how many base units make one of it (ms: 1000 us).
struct AxisUnit {
  std::string name;
  double base_per_unit = 1;
};

struct StackedBarRow {
  std::string label;
  std::vector<double> values;  // one per series, base units; a negative value draws as 0
  std::string note;            // printed right of the bar ("out of memory by 3.1 GiB")
};

struct StackedBarChart {
  std::string title;        // the chart's accessible name
  std::string value_label;  // "time per iteration": the axis reads "time per iteration (ms)"
  AxisUnit unit;
  std::vector<std::string> series;  // legend, in stacking order
  std::vector<StackedBarRow> rows;
  std::optional<double> reference;  // a vertical line across the rows (device capacity)
  std::string reference_label;
};

std::string svg_stacked_bars(const StackedBarChart& chart);

struct GanttBar {
  double start = 0;  // base units
  double end = 0;
  std::size_t series = 0;
  std::string text;     // drawn inside the bar where it fits (a micro-batch number)
  std::string tooltip;  // shown on hover (an SVG <title>)
};

struct GanttLane {
  std::string label;
  std::vector<GanttBar> bars;
};

struct GanttChart {
  std::string title;
  std::string time_label;  // "time from iteration start": the axis adds "(ms)"
  AxisUnit unit;
  std::vector<std::string> series;
  std::vector<GanttLane> lanes;
};

std::string svg_gantt(const GanttChart& chart);

// Axis ticks: 0 to the first multiple of a 1-2-5 step at or above `max_value`, about
// `target_ticks` of them.
std::vector<double> nice_ticks(double max_value, int target_ticks = 6);

}  // namespace perfsim::report
