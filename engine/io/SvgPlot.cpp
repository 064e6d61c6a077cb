#include "io/SvgPlot.h"

#include <algorithm>
#include <cmath>

namespace hyperstream::svg {

QString colour(int series) {
  static const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colours[series % 10];
}

QString number(double value, int precision) {
  return QString::number(value, 'g', precision);
}

namespace {

// A tick label: three significant digits, and every digit before the point (6620, not 6.62e+03).
QString tick(double value) {
  const double magnitude = std::abs(value);
  const int before = magnitude >= 1 ? static_cast<int>(std::floor(std::log10(magnitude))) + 1 : 0;
  return number(value, std::clamp(before, 3, 15));
}

}  // namespace

double scale(double value, double lo, double hi, double from, double to) {
  return hi > lo ? from + (value - lo) / (hi - lo) * (to - from) : (from + to) / 2;
}

QString open(const QString& label) {
  return QString(
             "<svg xmlns='http://www.w3.org/2000/svg' width='%1' height='%2' role='img' "
             "aria-label='%3'>")
      .arg(kWidth)
      .arg(kHeight)
      .arg(label.toHtmlEscaped());
}

QString axes(const QString& xLabel, const QString& yLabel, double xLo, double xHi, double yLo,
             double yHi, const QString& rightLabel) {
  QString svg;
  svg +=
      QString("<line x1='%1' y1='%2' x2='%3' y2='%2' stroke='#444'/>").arg(kX0).arg(kY0).arg(kX1);
  svg +=
      QString("<line x1='%1' y1='%2' x2='%1' y2='%3' stroke='#444'/>").arg(kX0).arg(kY0).arg(kY1);
  for (int i = 0; i <= 4; ++i) {
    const double y = kY0 + (kY1 - kY0) * i / 4.0, value = yLo + (yHi - yLo) * i / 4.0;
    svg += QString("<text x='%1' y='%2' text-anchor='end' font-size='11'>%3</text>")
               .arg(kX0 - 4)
               .arg(y + 4)
               .arg(tick(value));
    const double x = kX0 + (kX1 - kX0) * i / 4.0, xv = xLo + (xHi - xLo) * i / 4.0;
    svg += QString("<text x='%1' y='%2' text-anchor='middle' font-size='11'>%3</text>")
               .arg(x)
               .arg(kY0 + 15)
               .arg(tick(xv));
  }
  svg += QString("<text x='%1' y='%2' text-anchor='middle' font-size='12'>%3</text>")
             .arg((kX0 + kX1) / 2)
             .arg(kHeight - 5)
             .arg(xLabel.toHtmlEscaped());
  svg += QString(
             "<text x='14' y='%1' font-size='12' transform='rotate(-90 14 %1)' "
             "text-anchor='middle'>%2</text>")
             .arg((kY0 + kY1) / 2)
             .arg(yLabel.toHtmlEscaped());
  if (!rightLabel.isEmpty())
    svg += QString(
               "<text x='%1' y='%2' font-size='12' transform='rotate(90 %1 %2)' "
               "text-anchor='middle' fill='%4'>%3</text>")
               .arg(kWidth - 14)
               .arg((kY0 + kY1) / 2)
               .arg(rightLabel.toHtmlEscaped())
               .arg(colour(1));
  return svg;
}

QString polyline(const std::vector<double>& x, const std::vector<double>& y, double xLo, double xHi,
                 double yLo, double yHi, const QString& colour, double width) {
  QString points;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    points +=
        QString("%1,%2 ").arg(scale(x[i], xLo, xHi, kX0, kX1)).arg(scale(y[i], yLo, yHi, kY0, kY1));
  return QString("<polyline points='%1' fill='none' stroke='%2' stroke-width='%3'/>")
      .arg(points, colour)
      .arg(width);
}

}  // namespace hyperstream::svg
