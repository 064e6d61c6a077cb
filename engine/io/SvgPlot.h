#pragma once
// Inline SVG for the HTML reports: a plot area with labelled axes, and lines through points.
// No network, no JavaScript: QGIS's Results Viewer and any browser show them.

#include <QString>

#include <vector>

namespace hyperstream::svg {

constexpr int kWidth = 640, kHeight = 300, kLeft = 60, kRight = 60, kTop = 20, kBottom = 40;
// Plot area, in pixels.
constexpr int kX0 = kLeft, kX1 = kWidth - kRight, kY0 = kHeight - kBottom, kY1 = kTop;

// A colour per series, cycling.
QString colour(int series);
QString number(double value, int precision = 4);
// Maps [lo, hi] to pixel [from, to].
double scale(double value, double lo, double hi, double from, double to);
// The opening <svg> tag of a plot.
QString open(const QString& label);
// Both axes with five ticks each, their labels, and an optional label on the right (coloured as
// series 1).
QString axes(const QString& xLabel, const QString& yLabel, double xLo, double xHi, double yLo,
             double yHi, const QString& rightLabel = QString());
// A line through (x[i], y[i]) in data units within [xLo, xHi] x [yLo, yHi].
QString polyline(const std::vector<double>& x, const std::vector<double>& y, double xLo, double xHi,
                 double yLo, double yHi, const QString& colour, double width = 1.5);

}  // namespace hyperstream::svg
