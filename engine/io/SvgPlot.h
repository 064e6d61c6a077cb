#pragma once
// Inline SVG plots for the HTML reports: axes with round ticks (linear, integer or log), a right
// axis, lines that break where a value is NaN (bands left out), a zero line, markers and a
// legend. No network, no JavaScript: QGIS's Results Viewer and any browser show them.

#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace hyperstream::svg {

// A colour per series, cycling.
QString colour(int series);
QString number(double value, int precision = 4);

struct Axis {
  enum class Scale { Linear, Integer, Log };
  QString label;
  double lo = 0, hi = 1;  // widened to round ticks by Plot
  Scale scale = Scale::Linear;
  double step = 0;  // between ticks; set when widened
};

// The ticks of an axis widened to round ticks: 3-9 round values covering [lo, hi] (for Log,
// powers of ten, with 2 and 5 between them when the range spans less than three decades).
std::vector<double> ticks(const Axis& axis);

// The x axis of spectra over the selected bands (1-based): their wavelengths when every one has a
// wavelength (in `units`), else band numbers. Lines break between bands that are not neighbours in
// the file (bands left out, e.g. water-vapour windows).
class BandAxis {
 public:
  BandAxis(const std::vector<int>& bands, const std::vector<double>& wavelengths,
           const std::string& units);
  const Axis& axis() const { return axis_; }
  const std::vector<double>& x() const { return x_; }
  // One value per selected band, laid out as x() (NaN in the breaks).
  std::vector<double> values(const std::vector<double>& perBand) const;

 private:
  Axis axis_;
  std::vector<double> x_;
  std::vector<int> slot_;  // per selected band, its place in x_
};

class Plot {
 public:
  // The x axis spans its own range, the y axes are widened to round ticks.
  Plot(const QString& title, Axis x, Axis y);
  // A second y axis on the right, in `colour`, for lines drawn onRight.
  void setRightAxis(Axis axis, const QString& colour);
  // A line through (x[i], y[i]); a NaN breaks it. Dots mark each point when `dots`.
  void line(const std::vector<double>& x, const std::vector<double>& y, const QString& colour,
            bool dots = false, bool onRight = false);
  // A dashed vertical line at x with a note beside it (e.g. where the written components end).
  void marker(double x, const QString& note);
  // A thin horizontal line at y = 0 where the y range holds it.
  void zeroLine();
  // Names in their series' colours, at the top right.
  void legend(const QStringList& names);
  QString svg() const;

 private:
  double px(double x) const;
  double py(double y, bool onRight = false) const;
  QString axisTicks() const;

  QString title_;
  Axis x_, y_, right_;
  bool hasRight_ = false;
  QString rightColour_;
  QString body_;
  int markers_ = 0;
};

}  // namespace hyperstream::svg
