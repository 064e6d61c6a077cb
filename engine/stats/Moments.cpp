#include "stats/Moments.h"

#include "core/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace hyperstream {

namespace {

std::string text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string bandName(int band) {
  return "selected band number " + std::to_string(band + 1);
}

}  // namespace

void ComponentRange::merge(const ComponentRange& other) {
  if (minimum.empty()) {
    *this = other;
    return;
  }
  for (size_t k = 0; k < minimum.size(); ++k) {
    minimum[k] = std::min(minimum[k], other.minimum[k]);
    maximum[k] = std::max(maximum[k], other.maximum[k]);
  }
}

void checkBandScale(int band, double minimum, double maximum, double largest,
                    const std::string& where) {
  const double spread = maximum - minimum;
  const double magnitude = std::max(std::abs(minimum), std::abs(maximum));
  if (spread > 0 && spread < kSmallestSpread)
    throw Error("INPUT", bandName(band) + " spans only " + text(spread) + where + " (from " +
                             text(minimum) + " to " + text(maximum) +
                             "): too small a spread for its variance in float64 (at least " +
                             text(kSmallestSpread) + "): rescale the band");
  if (magnitude > largest)
    throw Error("INPUT", bandName(band) + " has values up to " + text(magnitude) + where +
                             ", too large for products in float64 (at most " + text(largest) +
                             "): mark them as nodata or rescale the band");
}

Error varianceOverflow(int band, double magnitude, const std::string& where) {
  return Error("INPUT", bandName(band) + " has values up to " + text(magnitude) + where +
                            ", too large for its variance in float64: mark them as nodata or "
                            "rescale the band");
}

void checkProductScale(const Moments& moments, double largest) {
  for (int b = 0; b < moments.bands; ++b)
    checkBandScale(b, moments.minimum[b], moments.maximum[b], largest, "");
}

Moments::Moments(int bandCount)
    : bands(bandCount),
      mean(bandCount, 0.0),
      comoment(static_cast<size_t>(bandCount) * bandCount, 0.0),
      minimum(bandCount, std::numeric_limits<double>::infinity()),
      maximum(bandCount, -std::numeric_limits<double>::infinity()) {}

void Moments::merge(const Moments& other) {
  if (other.count == 0) return;
  if (count == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(count);
  const double nb = static_cast<double>(other.count);
  const double n = na + nb;
  std::vector<double> delta(bands);
  for (int i = 0; i < bands; ++i) delta[i] = other.mean[i] - mean[i];
  const double weight = na * nb / n;
  for (int i = 0; i < bands; ++i) {
    double* row = &comoment[static_cast<size_t>(i) * bands];
    const double* otherRow = &other.comoment[static_cast<size_t>(i) * bands];
    for (int j = 0; j < bands; ++j) row[j] += otherRow[j] + delta[i] * delta[j] * weight;
  }
  for (int i = 0; i < bands; ++i) {
    mean[i] += delta[i] * nb / n;
    minimum[i] = std::min(minimum[i], other.minimum[i]);
    maximum[i] = std::max(maximum[i], other.maximum[i]);
  }
  count += other.count;
}

size_t Moments::packedSize(int bands) {
  return 1 + static_cast<size_t>(bands) * (bands + 3);
}

std::vector<double> Moments::packed() const {
  std::vector<double> values;
  values.reserve(packedSize(bands));
  values.push_back(static_cast<double>(count));  // exact below 2^53 pixels
  for (const std::vector<double>* part : {&mean, &minimum, &maximum, &comoment})
    values.insert(values.end(), part->begin(), part->end());
  return values;
}

Moments Moments::unpacked(const double* values, int bands) {
  Moments moments(bands);
  moments.count = static_cast<int64_t>(*values++);
  for (std::vector<double>* part :
       {&moments.mean, &moments.minimum, &moments.maximum, &moments.comoment}) {
    std::copy(values, values + part->size(), part->begin());
    values += part->size();
  }
  return moments;
}

std::vector<double> Moments::covariance() const {
  std::vector<double> result(comoment);
  const double divisor = count > 1 ? static_cast<double>(count - 1) : 1.0;
  for (double& value : result) value /= divisor;
  return result;
}

}  // namespace hyperstream
