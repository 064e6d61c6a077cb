#include "io/SvgPlot.h"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace hyperstream::svg {

namespace {

constexpr int kWidth = 680, kHeight = 320, kLeft = 76, kRight = 84, kTop = 16, kBottom = 44;
constexpr int kX0 = kLeft, kX1 = kWidth - kRight, kY0 = kHeight - kBottom, kY1 = kTop;

// 1, 2 or 5 times a power of ten, near `raw`.
double roundStep(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / power;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * power;
}

double linearStep(const Axis& axis) {
  const double span = axis.hi > axis.lo ? axis.hi - axis.lo : std::max(1.0, std::abs(axis.lo));
  const double step = roundStep(span / 5);
  return axis.scale == Axis::Scale::Integer ? std::max(1.0, std::round(step)) : step;
}

// The axis widened to whole ticks (whole decades for Log), its step set.
Axis widened(Axis axis) {
  if (axis.step > 0) return axis;
  if (axis.scale == Axis::Scale::Log) {
    axis.lo = std::pow(10.0, std::floor(std::log10(axis.lo)));
    axis.hi = std::pow(10.0, std::ceil(std::log10(axis.hi)));
    if (axis.hi <= axis.lo) axis.hi = axis.lo * 10;
    axis.step = 10;  // a factor
    return axis;
  }
  if (axis.hi <= axis.lo) {
    axis.lo -= 1;
    axis.hi += 1;
  }
  axis.step = linearStep(axis);
  if (axis.scale == Axis::Scale::Integer) return axis;  // components and bands start where they do
  axis.lo = std::floor(axis.lo / axis.step + 1e-9) * axis.step;
  axis.hi = std::ceil(axis.hi / axis.step - 1e-9) * axis.step;
  return axis;
}

// A tick's label with the decimals its step needs (0.05, 0.1, not 0.1000000001; 1500, not 1.5e3).
QString tickLabel(double value, const Axis& axis) {
  if (axis.scale == Axis::Scale::Log) {
    const double exponent = std::round(std::log10(value));
    if (std::abs(value / std::pow(10.0, exponent) - 1) < 1e-9 && std::abs(exponent) >= 4)
      return QString("10<tspan dy='-5' font-size='9'>%1</tspan>").arg(exponent);  // 10⁶
    return QString::number(value, 'f',
                           std::max(0, static_cast<int>(-std::floor(std::log10(value)))));
  }
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(axis.step))));
  if (std::abs(value) < axis.step * 1e-6) value = 0;  // no "-0"
  return QString::number(value, 'f', decimals);
}

double position(double value, const Axis& axis, double from, double to) {
  if (axis.scale == Axis::Scale::Log) {
    const double lo = std::log10(axis.lo), hi = std::log10(axis.hi);
    return from + (std::log10(value) - lo) / (hi - lo) * (to - from);
  }
  return axis.hi > axis.lo ? from + (value - axis.lo) / (axis.hi - axis.lo) * (to - from)
                           : (from + to) / 2;
}

// The axis over its own range (x axes: bands, wavelengths, components), its step set.
Axis exact(Axis axis) {
  if (axis.scale == Axis::Scale::Log || axis.hi <= axis.lo) return widened(axis);
  axis.step = linearStep(axis);
  return axis;
}

}  // namespace

QString colour(int series) {
  static const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colours[series % 10];
}

QString number(double value, int precision) {
  return QString::number(value, 'g', precision);
}

std::vector<double> ticks(const Axis& unwidened) {
  const Axis axis = widened(unwidened);
  std::vector<double> values;
  if (axis.scale == Axis::Scale::Log) {
    const int first = static_cast<int>(std::floor(std::log10(axis.lo) + 1e-9));
    const int last = static_cast<int>(std::ceil(std::log10(axis.hi) - 1e-9));
    const bool fine = last - first < 3;
    for (int d = first; d <= last; ++d)
      for (double m : {1.0, 2.0, 5.0}) {
        const double value = m * std::pow(10.0, d);
        if ((m == 1.0 || fine) && value >= axis.lo * (1 - 1e-9) && value <= axis.hi * (1 + 1e-9))
          values.push_back(value);
      }
    return values;
  }
  const double step = axis.step;
  for (double value = std::ceil(axis.lo / step - 1e-9) * step; value <= axis.hi + step * 1e-9;
       value += step)
    values.push_back(value);
  return values;
}

BandAxis::BandAxis(const std::vector<int>& bands, const std::vector<double>& wavelengths,
                   const std::string& units) {
  bool haveWavelengths = !bands.empty();
  for (int b : bands) haveWavelengths &= std::isfinite(wavelengths[b - 1]);
  axis_.label = haveWavelengths
                    ? QObject::tr("wavelength (%1)")
                          .arg(units.empty() ? QStringLiteral("?") : QString::fromStdString(units))
                    : QObject::tr("band");
  axis_.scale = haveWavelengths ? Axis::Scale::Linear : Axis::Scale::Integer;
  for (size_t i = 0; i < bands.size(); ++i) {
    if (i > 0 && bands[i] != bands[i - 1] + 1) x_.push_back(NAN);
    slot_.push_back(static_cast<int>(x_.size()));
    x_.push_back(haveWavelengths ? wavelengths[bands[i] - 1] : bands[i]);
  }
  axis_.lo = bands.empty() ? 0 : *std::min_element(x_.begin(), x_.end(), [](double a, double b) {
    return std::isnan(b) || a < b;
  });
  axis_.hi = bands.empty() ? 1 : *std::max_element(x_.begin(), x_.end(), [](double a, double b) {
    return std::isnan(a) || a < b;
  });
}

std::vector<double> BandAxis::values(const std::vector<double>& perBand) const {
  std::vector<double> y(x_.size(), NAN);
  for (size_t i = 0; i < slot_.size() && i < perBand.size(); ++i) y[slot_[i]] = perBand[i];
  return y;
}

Plot::Plot(const QString& title, Axis x, Axis y)
    : title_(title), x_(exact(std::move(x))), y_(widened(std::move(y))) {}

void Plot::setRightAxis(Axis axis, const QString& colour) {
  right_ = widened(std::move(axis));
  rightColour_ = colour;
  hasRight_ = true;
}

double Plot::px(double x) const {
  return position(x, x_, kX0, kX1);
}

double Plot::py(double y, bool onRight) const {
  return position(y, onRight ? right_ : y_, kY0, kY1);
}

void Plot::line(const std::vector<double>& x, const std::vector<double>& y, const QString& colour,
                bool dots, bool onRight) {
  QString path, marks;
  bool drawing = false;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
      drawing = false;
      continue;
    }
    const double u = px(x[i]), v = py(y[i], onRight);
    path += QString("%1%2,%3 ").arg(drawing ? "L" : "M").arg(u, 0, 'f', 1).arg(v, 0, 'f', 1);
    drawing = true;
    if (dots)
      marks += QString("<circle cx='%1' cy='%2' r='2.5' fill='%3'/>")
                   .arg(u, 0, 'f', 1)
                   .arg(v, 0, 'f', 1)
                   .arg(colour);
  }
  body_ += QString("<path d='%1' fill='none' stroke='%2' stroke-width='1.5'/>").arg(path, colour) +
           marks;
}

void Plot::marker(double x, const QString& note) {
  const double u = px(x);
  body_ += QString(
               "<line x1='%1' y1='%2' x2='%1' y2='%3' stroke='#555' stroke-dasharray='4 3'/>"
               "<text x='%4' y='%5' font-size='11' fill='#333'>%6</text>")
               .arg(u, 0, 'f', 1)
               .arg(kY0)
               .arg(kY1)
               .arg(u + 4, 0, 'f', 1)
               .arg(kY1 + 12 + 14 * markers_++)  // each note a line below the last one's
               .arg(note.toHtmlEscaped());
}

void Plot::zeroLine() {
  if (y_.scale == Axis::Scale::Log || y_.lo >= 0 || y_.hi <= 0) return;
  body_ += QString("<line x1='%1' y1='%2' x2='%3' y2='%2' stroke='#999' stroke-width='0.8'/>")
               .arg(kX0)
               .arg(py(0), 0, 'f', 1)
               .arg(kX1);
}

void Plot::legend(const QStringList& names) {
  for (int k = 0; k < names.size(); ++k)
    body_ += QString("<text x='%1' y='%2' font-size='11' fill='%3'>%4</text>")
                 .arg(kX1 + 8)
                 .arg(kY1 + 10 + 13 * k)
                 .arg(colour(k))
                 .arg(names[k].toHtmlEscaped());
}

QString Plot::axisTicks() const {
  QString svg;
  for (double value : ticks(x_)) {
    const double u = px(value);
    svg += QString(
               "<line x1='%1' y1='%2' x2='%1' y2='%3' stroke='#444'/>"
               "<text x='%1' y='%4' text-anchor='middle' font-size='11'>%5</text>")
               .arg(u, 0, 'f', 1)
               .arg(kY0)
               .arg(kY0 + 4)
               .arg(kY0 + 16)
               .arg(tickLabel(value, x_));
  }
  for (double value : ticks(y_)) {
    const double v = py(value);
    svg += QString(
               "<line x1='%1' y1='%2' x2='%3' y2='%2' stroke='#eee'/>"
               "<text x='%4' y='%5' text-anchor='end' font-size='11'>%6</text>")
               .arg(kX0)
               .arg(v, 0, 'f', 1)
               .arg(kX1)
               .arg(kX0 - 6)
               .arg(v + 4, 0, 'f', 1)
               .arg(tickLabel(value, y_));
  }
  if (hasRight_)
    for (double value : ticks(right_)) {
      const double v = py(value, true);
      svg += QString("<text x='%1' y='%2' font-size='11' fill='%3'>%4</text>")
                 .arg(kX1 + 6)
                 .arg(v + 4, 0, 'f', 1)
                 .arg(rightColour_)
                 .arg(tickLabel(value, right_));
    }
  return svg;
}

QString Plot::svg() const {
  QString svg = QString(
                    "<svg xmlns='http://www.w3.org/2000/svg' width='%1' height='%2' "
                    "role='img' aria-label='%3'>")
                    .arg(kWidth)
                    .arg(kHeight)
                    .arg(title_.toHtmlEscaped());
  svg += axisTicks();
  svg += QString("<rect x='%1' y='%2' width='%3' height='%4' fill='none' stroke='#444'/>")
             .arg(kX0)
             .arg(kY1)
             .arg(kX1 - kX0)
             .arg(kY0 - kY1);
  svg += QString("<text x='%1' y='%2' text-anchor='middle' font-size='12'>%3</text>")
             .arg((kX0 + kX1) / 2)
             .arg(kHeight - 8)
             .arg(x_.label.toHtmlEscaped());
  svg += QString(
             "<text x='14' y='%1' font-size='12' transform='rotate(-90 14 %1)' "
             "text-anchor='middle'>%2</text>")
             .arg((kY0 + kY1) / 2)
             .arg(y_.label.toHtmlEscaped());
  if (hasRight_)
    svg += QString(
               "<text x='%1' y='%2' font-size='12' transform='rotate(90 %1 %2)' "
               "text-anchor='middle' fill='%4'>%3</text>")
               .arg(kWidth - 14)
               .arg((kY0 + kY1) / 2)
               .arg(right_.label.toHtmlEscaped())
               .arg(rightColour_);
  return svg + body_ + "</svg>";
}

}  // namespace hyperstream::svg
