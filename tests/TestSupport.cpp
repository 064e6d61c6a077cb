#include "TestSupport.h"

#include <gdal_priv.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>

namespace testing {

Cube correlatedCube(int64_t rows, int64_t cols, int bands, uint64_t seed, double mean,
                    double spread) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> means(bands), lower(static_cast<size_t>(bands) * bands, 0.0);
  for (int b = 0; b < bands; ++b) means[b] = mean + 50.0 * unit(random);
  for (int j = 0; j < bands; ++j) {
    const double scale = spread * std::pow(0.7, j);
    for (int i = j; i < bands; ++i)
      lower[static_cast<size_t>(i) * bands + j] = scale * unit(random);
  }
  Cube cube;
  cube.rows = rows;
  cube.cols = cols;
  cube.bands = bands;
  cube.nodata.assign(bands, std::nan(""));
  cube.values.resize(static_cast<size_t>(rows * cols * bands));
  std::vector<double> z(bands);
  for (int64_t p = 0; p < rows * cols; ++p) {
    for (double& v : z) v = normal(random);
    for (int i = 0; i < bands; ++i) {
      double v = means[i] + 2.0 * normal(random);  // sensor noise keeps every eigenvalue >= 4
      for (int j = 0; j <= i; ++j) v += lower[static_cast<size_t>(i) * bands + j] * z[j];
      cube.values[static_cast<size_t>(p * bands + i)] = v;
    }
  }
  return cube;
}

void roundValues(Cube& cube) {
  for (double& v : cube.values)
    if (std::isfinite(v)) v = std::round(v);
}

void writeCube(const Cube& cube, const std::string& path, GDALDataType type,
               const std::string& driverName, const std::vector<std::string>& options) {
  GDALAllRegister();
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName(driverName.c_str());
  char** list = nullptr;
  for (const std::string& option : options) list = CSLAddString(list, option.c_str());
  GDALDataset* dataset = driver->Create(path.c_str(), static_cast<int>(cube.cols),
                                        static_cast<int>(cube.rows), cube.bands, type, list);
  CSLDestroy(list);
  if (!dataset) throw std::runtime_error("cannot create " + path);
  double transform[6] = {1000.0, 2.0, 0.0, 5000.0, 0.0, -2.0};
  dataset->SetGeoTransform(transform);
  dataset->SetProjection("EPSG:32633");
  for (int b = 0; b < cube.bands; ++b)
    if (!std::isnan(cube.nodata[b])) dataset->GetRasterBand(b + 1)->SetNoDataValue(cube.nodata[b]);
  const GSpacing pixel = static_cast<GSpacing>(cube.bands) * sizeof(double);
  if (dataset->RasterIO(GF_Write, 0, 0, static_cast<int>(cube.cols), static_cast<int>(cube.rows),
                        const_cast<double*>(cube.values.data()), static_cast<int>(cube.cols),
                        static_cast<int>(cube.rows), GDT_Float64, cube.bands, nullptr, pixel,
                        pixel * cube.cols, sizeof(double)) != CE_None)
    throw std::runtime_error("cannot write " + path);
  GDALClose(dataset);
}

std::unique_ptr<GDALDataset> openReadOnly(const QString& name) {
  return std::unique_ptr<GDALDataset>(
      GDALDataset::FromHandle(GDALOpen(name.toUtf8().constData(), GA_ReadOnly)));
}

std::vector<double> samplesOf(const QString& name) {
  std::unique_ptr<GDALDataset> dataset = openReadOnly(name);
  if (!dataset) return {};
  const int width = dataset->GetRasterXSize(), height = dataset->GetRasterYSize();
  std::vector<double> values(static_cast<size_t>(width) * height * dataset->GetRasterCount());
  if (dataset->RasterIO(GF_Read, 0, 0, width, height, values.data(), width, height, GDT_Float64,
                        dataset->GetRasterCount(), nullptr, 0, 0, 0) != CE_None)
    return {};
  return values;
}

// `cube` as a netCDF-4 file holding two arrays, reflectance(band, y, x) as UInt16 and mask(y, x),
// with band, y and x coordinates (y descending: the first row is the northernmost, as GDAL reads
// it).
void writeNetcdfCube(const Cube& cube, const std::string& path) {
  const auto check = [&](bool done) {
    if (!done) throw std::runtime_error("cannot write " + path);
  };
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName("netCDF");
  if (!driver) throw std::runtime_error("GDAL has no netCDF driver");
  std::unique_ptr<GDALDataset> file(driver->CreateMultiDimensional(path.c_str(), nullptr, nullptr));
  check(bool(file));
  std::shared_ptr<GDALGroup> root = file->GetRootGroup();
  auto band = root->CreateDimension("band", "", "", cube.bands);
  auto y = root->CreateDimension("y", "", "", cube.rows);
  auto x = root->CreateDimension("x", "", "", cube.cols);
  const auto float64 = GDALExtendedDataType::Create(GDT_Float64);
  const auto text = GDALExtendedDataType::CreateString();
  auto writeCoordinates = [&](const std::shared_ptr<GDALDimension>& dimension, double start,
                              double step) {
    auto array = root->CreateMDArray(dimension->GetName(), {dimension}, float64);
    check(bool(array));
    const std::string axis = dimension->GetName();
    if (axis == "x" || axis == "y")
      for (const auto& [key, value] :
           {std::pair<std::string, std::string>{"axis", axis == "x" ? "X" : "Y"},
            {"standard_name", "projection_" + axis + "_coordinate"},
            {"units", "m"}})
        check(bool(array->CreateAttribute(key, {}, text)->Write(value.c_str())));
    std::vector<double> values(dimension->GetSize());
    for (size_t i = 0; i < values.size(); ++i) values[i] = start + step * static_cast<double>(i);
    const GUInt64 origin[1] = {0};
    const size_t count[1] = {values.size()};
    check(bool(array->Write(origin, count, nullptr, nullptr, float64, values.data())));
  };
  writeCoordinates(y, 5000.0 - 1.0, -2.0);
  writeCoordinates(x, 1000.0 + 1.0, 2.0);
  writeCoordinates(band, 1.0, 1.0);
  auto reflectance =
      root->CreateMDArray("reflectance", {band, y, x}, GDALExtendedDataType::Create(GDT_UInt16));
  check(bool(reflectance));
  std::vector<uint16_t> samples(static_cast<size_t>(cube.bands * cube.pixels()));
  for (int b = 0; b < cube.bands; ++b)
    for (int64_t p = 0; p < cube.pixels(); ++p)
      samples[b * cube.pixels() + p] = static_cast<uint16_t>(cube.values[p * cube.bands + b]);
  const GUInt64 origin[3] = {0, 0, 0};
  const size_t count[3] = {static_cast<size_t>(cube.bands), static_cast<size_t>(cube.rows),
                           static_cast<size_t>(cube.cols)};
  check(bool(reflectance->Write(origin, count, nullptr, nullptr,
                                GDALExtendedDataType::Create(GDT_UInt16), samples.data())));
  auto mask = root->CreateMDArray("mask", {y, x}, GDALExtendedDataType::Create(GDT_Byte));
  check(bool(mask));
  std::vector<uint8_t> ones(static_cast<size_t>(cube.pixels()), 1);
  check(bool(mask->Write(origin, count + 1, nullptr, nullptr,
                         GDALExtendedDataType::Create(GDT_Byte), ones.data())));
}

Cube readCube(const std::string& path) {
  GDALAllRegister();
  std::unique_ptr<GDALDataset> dataset(
      GDALDataset::FromHandle(GDALOpen(path.c_str(), GA_ReadOnly)));
  if (!dataset) throw std::runtime_error("cannot open " + path);
  Cube cube;
  cube.rows = dataset->GetRasterYSize();
  cube.cols = dataset->GetRasterXSize();
  cube.bands = dataset->GetRasterCount();
  cube.values.resize(static_cast<size_t>(cube.rows * cube.cols * cube.bands));
  for (int b = 1; b <= cube.bands; ++b) {
    int has = 0;
    const double v = dataset->GetRasterBand(b)->GetNoDataValue(&has);
    cube.nodata.push_back(has ? v : std::nan(""));
  }
  const GSpacing pixel = static_cast<GSpacing>(cube.bands) * sizeof(double);
  if (dataset->RasterIO(GF_Read, 0, 0, static_cast<int>(cube.cols), static_cast<int>(cube.rows),
                        cube.values.data(), static_cast<int>(cube.cols),
                        static_cast<int>(cube.rows), GDT_Float64, cube.bands, nullptr, pixel,
                        pixel * cube.cols, sizeof(double)) != CE_None)
    throw std::runtime_error("cannot read " + path);
  return cube;
}

bool referenceValid(const Cube& cube, int64_t pixel) {
  for (int b = 0; b < cube.bands; ++b) {
    const double v = cube.values[static_cast<size_t>(pixel * cube.bands + b)];
    if (!std::isfinite(v) || v == cube.nodata[b]) return false;
  }
  return true;
}

std::vector<double> jacobi(std::vector<double> a, int n, std::vector<double>& vectors) {
  vectors.assign(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) vectors[static_cast<size_t>(i) * n + i] = 1.0;
  auto A = [&](int i, int j) -> double& { return a[static_cast<size_t>(i) * n + j]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, diag = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) (i == j ? diag : off) += A(i, j) * A(i, j);
    if (off <= 1e-30 * diag) break;
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        if (A(p, q) == 0.0) continue;
        const double theta = (A(q, q) - A(p, p)) / (2.0 * A(p, q));
        const double t =
            (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < n; ++k) {  // columns p, q
          const double akp = A(k, p), akq = A(k, q);
          A(k, p) = c * akp - s * akq;
          A(k, q) = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // rows p, q
          const double apk = A(p, k), aqk = A(q, k);
          A(p, k) = c * apk - s * aqk;
          A(q, k) = s * apk + c * aqk;
        }
        for (int k = 0; k < n; ++k) {
          double& vkp = vectors[static_cast<size_t>(k) * n + p];
          double& vkq = vectors[static_cast<size_t>(k) * n + q];
          const double x = vkp, y = vkq;
          vkp = c * x - s * y;
          vkq = s * x + c * y;
        }
      }
  }
  std::vector<double> values(n);
  for (int i = 0; i < n; ++i) values[i] = A(i, i);
  return values;
}

namespace {

// Mean and covariance (divided by count - 1) of the rows of `values` (n x bands) marked in
// `use`, two-pass in float64.
std::vector<double> twoPassCovariance(const std::vector<double>& values, int bands,
                                      const std::vector<unsigned char>& use,
                                      std::vector<double>& mean, int64_t& count) {
  const int64_t n = static_cast<int64_t>(use.size());
  mean.assign(bands, 0.0);
  count = 0;
  for (int64_t p = 0; p < n; ++p) {
    if (!use[p]) continue;
    ++count;
    for (int b = 0; b < bands; ++b) mean[b] += values[static_cast<size_t>(p * bands + b)];
  }
  for (double& m : mean) m /= static_cast<double>(count);
  std::vector<double> cov(static_cast<size_t>(bands) * bands, 0.0);
  for (int64_t p = 0; p < n; ++p) {
    if (!use[p]) continue;
    for (int i = 0; i < bands; ++i) {
      const double di = values[static_cast<size_t>(p * bands + i)] - mean[i];
      for (int j = 0; j < bands; ++j)
        cov[static_cast<size_t>(i) * bands + j] +=
            di * (values[static_cast<size_t>(p * bands + j)] - mean[j]);
    }
  }
  for (double& c : cov) c /= static_cast<double>(count - 1);
  return cov;
}

// The used bands' block of a bands x bands matrix.
std::vector<double> usedBlock(const std::vector<double>& matrix, int bands,
                              const std::vector<int>& used) {
  const size_t m = used.size();
  std::vector<double> a(m * m);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < m; ++j)
      a[i * m + j] = matrix[static_cast<size_t>(used[i]) * bands + used[j]];
  return a;
}

// Components sorted by descending eigenvalue, loadings expanded to every band, the largest
// magnitude positive. `vectors` holds them as columns (m x m).
void addComponents(Reference& ref, int bands, const std::vector<int>& used,
                   const std::vector<double>& values, const std::vector<double>& vectors) {
  const int m = static_cast<int>(used.size());
  std::vector<int> order(m);
  for (int i = 0; i < m; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return values[x] > values[y]; });
  for (int k : order) {
    ref.eigenvalues.push_back(values[k]);
    std::vector<double> loadings(bands, 0.0);
    int largest = 0;
    for (int i = 0; i < m; ++i)
      if (std::abs(vectors[static_cast<size_t>(i) * m + k]) >
          std::abs(vectors[static_cast<size_t>(largest) * m + k]))
        largest = i;
    const double sign = vectors[static_cast<size_t>(largest) * m + k] < 0 ? -1.0 : 1.0;
    for (int i = 0; i < m; ++i) loadings[used[i]] = sign * vectors[static_cast<size_t>(i) * m + k];
    ref.vectors.push_back(loadings);
  }
}

// The valid pixels' statistics every reference starts from; `used`: the non-constant bands.
std::vector<double> signalCovariance(const Cube& cube, Reference& ref, std::vector<int>& used) {
  const int bands = cube.bands;
  std::vector<unsigned char> valid(static_cast<size_t>(cube.pixels()));
  for (int64_t p = 0; p < cube.pixels(); ++p) valid[p] = referenceValid(cube, p) ? 1 : 0;
  std::vector<double> cov = twoPassCovariance(cube.values, bands, valid, ref.mean, ref.valid);
  used.clear();
  for (int b = 0; b < bands; ++b) {
    ref.stddev.push_back(std::sqrt(cov[static_cast<size_t>(b) * bands + b]));
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t p = 0; p < cube.pixels(); ++p)
      if (valid[p]) {
        lo = std::min(lo, cube.values[static_cast<size_t>(p * bands + b)]);
        hi = std::max(hi, cube.values[static_cast<size_t>(p * bands + b)]);
      }
    (lo == hi ? ref.constant : used).push_back(b);
  }
  return cov;
}

// Lower-triangular L with L L^T = a (n x n, row-major).
std::vector<double> cholesky(const std::vector<double>& a, int n) {
  std::vector<double> l(static_cast<size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j) {
    double d = a[static_cast<size_t>(j) * n + j];
    for (int k = 0; k < j; ++k)
      d -= l[static_cast<size_t>(j) * n + k] * l[static_cast<size_t>(j) * n + k];
    l[static_cast<size_t>(j) * n + j] = std::sqrt(d);
    for (int i = j + 1; i < n; ++i) {
      double v = a[static_cast<size_t>(i) * n + j];
      for (int k = 0; k < j; ++k)
        v -= l[static_cast<size_t>(i) * n + k] * l[static_cast<size_t>(j) * n + k];
      l[static_cast<size_t>(i) * n + j] = v / l[static_cast<size_t>(j) * n + j];
    }
  }
  return l;
}

// X = L^-1 B for lower-triangular L (n x n) and B (n x n), forward substitution by columns.
std::vector<double> solveLower(const std::vector<double>& l, const std::vector<double>& b, int n) {
  std::vector<double> x(b.size());
  for (int c = 0; c < n; ++c)
    for (int i = 0; i < n; ++i) {
      double v = b[static_cast<size_t>(i) * n + c];
      for (int k = 0; k < i; ++k)
        v -= l[static_cast<size_t>(i) * n + k] * x[static_cast<size_t>(k) * n + c];
      x[static_cast<size_t>(i) * n + c] = v / l[static_cast<size_t>(i) * n + i];
    }
  return x;
}

std::vector<double> transposed(const std::vector<double>& a, int n) {
  std::vector<double> t(a.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      t[static_cast<size_t>(j) * n + i] = a[static_cast<size_t>(i) * n + j];
  return t;
}

}  // namespace

Cube smoothScene(int64_t rows, int64_t cols, int bands, uint64_t seed, double mean) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Cube cube;
  cube.rows = rows, cube.cols = cols, cube.bands = bands;
  cube.nodata.assign(bands, std::nan(""));
  cube.values.resize(static_cast<size_t>(rows * cols * bands));
  constexpr size_t kFields = 4;
  std::vector<double> spectra(kFields * bands), noise(bands), f(3 * kFields);
  for (double& s : spectra) s = 400.0 * unit(random);
  for (double& n : noise) n = 2.0 + 8.0 * unit(random);
  for (double& v : f) v = 0.05 + 0.3 * unit(random);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      for (int b = 0; b < bands; ++b) {
        double v = mean + noise[b] * normal(random);
        for (size_t k = 0; k < kFields; ++k)
          v += spectra[k * bands + b] * std::sin(f[3 * k] * r + f[3 * k + 1] * c +
                                                 f[3 * k + 2] * static_cast<double>(k + 1));
        cube.at(r, c, b) = v;
      }
  return cube;
}

Reference referencePca(const Cube& cube, bool correlationMatrix) {
  Reference ref;
  std::vector<int> used;
  const std::vector<double> cov = signalCovariance(cube, ref, used);
  std::vector<double> a = usedBlock(cov, cube.bands, used);
  const int m = static_cast<int>(used.size());
  if (correlationMatrix)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j)
        a[static_cast<size_t>(i) * m + j] /= ref.stddev[used[i]] * ref.stddev[used[j]];
  std::vector<double> vectors;
  const std::vector<double> values = jacobi(a, m, vectors);
  addComponents(ref, cube.bands, used, values, vectors);
  return ref;
}

std::vector<double> referenceNoiseCovariance(const Cube& cube, int rowStep, int columnStep,
                                             int64_t& pairs) {
  const int bands = cube.bands;
  std::vector<double> differences;
  std::vector<unsigned char> use;
  for (int64_t r = 0; r + rowStep < cube.rows; ++r)
    for (int64_t c = 0; c < cube.cols; ++c) {
      const int64_t c2 = c + columnStep;
      if (c2 < 0 || c2 >= cube.cols) continue;
      const int64_t first = r * cube.cols + c, second = (r + rowStep) * cube.cols + c2;
      use.push_back(referenceValid(cube, first) && referenceValid(cube, second) ? 1 : 0);
      for (int b = 0; b < bands; ++b)
        differences.push_back(use.back() ? cube.values[static_cast<size_t>(first * bands + b)] -
                                               cube.values[static_cast<size_t>(second * bands + b)]
                                         : 0.0);
    }
  std::vector<double> mean;
  std::vector<double> cov = twoPassCovariance(differences, bands, use, mean, pairs);
  for (double& v : cov) v *= 0.5;
  return cov;
}

Reference referenceMnf(const Cube& cube, int rowStep, int columnStep) {
  Reference ref;
  std::vector<int> used;
  const std::vector<double> signal = signalCovariance(cube, ref, used);
  int64_t pairs = 0;
  const std::vector<double> noise = referenceNoiseCovariance(cube, rowStep, columnStep, pairs);
  const int m = static_cast<int>(used.size());
  // S w = λ N w: with N = L Lᵀ, C = L⁻¹ S L⁻ᵀ = U Λ Uᵀ and W = L⁻ᵀ U.
  const std::vector<double> l = cholesky(usedBlock(noise, cube.bands, used), m);
  const std::vector<double> half = solveLower(l, usedBlock(signal, cube.bands, used), m);
  const std::vector<double> c = solveLower(l, transposed(half, m), m);
  std::vector<double> u;
  const std::vector<double> values = jacobi(c, m, u);
  // W = L⁻ᵀ U: back substitution with Lᵀ.
  std::vector<double> w(u.size());
  for (int col = 0; col < m; ++col)
    for (int i = m - 1; i >= 0; --i) {
      double v = u[static_cast<size_t>(i) * m + col];
      for (int k = i + 1; k < m; ++k)
        v -= l[static_cast<size_t>(k) * m + i] * w[static_cast<size_t>(k) * m + col];
      w[static_cast<size_t>(i) * m + col] = v / l[static_cast<size_t>(i) * m + i];
    }
  addComponents(ref, cube.bands, used, values, w);
  return ref;
}

std::vector<double> referenceComponent(const Cube& cube, const Reference& reference, int k,
                                       bool correlationMatrix) {
  std::vector<double> out(static_cast<size_t>(cube.pixels()), std::nan(""));
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    if (!referenceValid(cube, p)) continue;
    double v = 0;
    for (int b = 0; b < cube.bands; ++b) {
      double x = cube.values[static_cast<size_t>(p * cube.bands + b)] - reference.mean[b];
      if (correlationMatrix && reference.stddev[b] > 0) x /= reference.stddev[b];
      v += x * reference.vectors[k][b];
    }
    out[static_cast<size_t>(p)] = v;
  }
  return out;
}

std::vector<std::vector<double>> referenceInverseLoadings(const Reference& reference, int bands,
                                                          const std::vector<double>* noise,
                                                          bool correlationMatrix) {
  std::vector<std::vector<double>> inverse;
  for (const std::vector<double>& w : reference.vectors) {
    std::vector<double> column(static_cast<size_t>(bands));
    for (int b = 0; b < bands; ++b) {
      if (noise) {
        for (int c = 0; c < bands; ++c)
          column[b] += (*noise)[static_cast<size_t>(b) * bands + c] * w[c];
      } else {
        column[b] = w[b] * (correlationMatrix ? reference.stddev[b] : 1.0);
      }
    }
    inverse.push_back(column);
  }
  return inverse;
}

Cube referenceRebuild(const Cube& cube, const Reference& reference, int components,
                      const std::vector<std::vector<double>>& inverse, bool correlationMatrix) {
  Cube out = cube;
  std::fill(out.values.begin(), out.values.end(), std::nan(""));
  std::vector<std::vector<double>> y;
  y.reserve(components);
  for (int k = 0; k < components; ++k)
    y.push_back(referenceComponent(cube, reference, k, correlationMatrix));
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    if (!referenceValid(cube, p)) continue;
    for (int b = 0; b < cube.bands; ++b) {
      double v = reference.mean[b];
      for (int k = 0; k < components; ++k) v += y[k][static_cast<size_t>(p)] * inverse[k][b];
      out.values[static_cast<size_t>(p * cube.bands + b)] = v;
    }
  }
  return out;
}

std::vector<double> bandValues(const Cube& cube, int band) {
  std::vector<double> out(static_cast<size_t>(cube.pixels()));
  for (int64_t p = 0; p < cube.pixels(); ++p)
    out[static_cast<size_t>(p)] = cube.values[static_cast<size_t>(p * cube.bands + band)];
  return out;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  double n = 0, ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::isfinite(a[i]) && std::isfinite(b[i])) {
      ++n;
      ma += a[i];
      mb += b[i];
    }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::isfinite(a[i]) && std::isfinite(b[i])) {
      sab += (a[i] - ma) * (b[i] - mb);
      saa += (a[i] - ma) * (a[i] - ma);
      sbb += (b[i] - mb) * (b[i] - mb);
    }
  return sab / std::sqrt(saa * sbb);
}

RelativeErrors relativeErrors(const std::vector<double>& values,
                              const std::vector<double>& reference, double tolerance,
                              const char* what) {
  RelativeErrors errors;
  for (size_t k = 0; k < values.size() && k < reference.size(); ++k) {
    const double relative = std::abs(values[k] / reference[k] - 1);
    errors.worst = std::max(errors.worst, relative);
    if (relative <= tolerance || errors.firstBeyond >= 0) continue;
    errors.firstBeyond = static_cast<int>(k);
    errors.message = QString("%1 %2: %3 vs reference %4")
                         .arg(what)
                         .arg(k + 1)
                         .arg(values[k], 0, 'g', 17)
                         .arg(reference[k], 0, 'g', 17)
                         .toStdString();
  }
  return errors;
}

double componentMismatch(const Cube& written, int k, const std::vector<double>& expected) {
  std::vector<double> values = bandValues(written, k);
  for (double& v : values)
    if (v == written.nodata[k]) v = NAN;
  for (size_t p = 0; p < values.size(); ++p)
    if (std::isfinite(values[p]) != std::isfinite(expected[p])) return 2;
  return 1 - correlation(values, expected);
}

double maxRelativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(b[i]), 1e-300));
  return worst;
}

QString tempDir() {
  static QTemporaryDir root;
  static int counter = 0;
  QString path = root.filePath(QString("case%1").arg(++counter));
  QDir().mkpath(path);
  return path;
}

void writeVrtMissingRows(const Cube& cube, int64_t firstMissing, const QString& path) {
  const QString dir = QFileInfo(path).absolutePath();
  Cube top = cube, bottom = cube;
  top.rows = firstMissing;
  top.values.resize(static_cast<size_t>(top.pixels()) * top.bands);
  bottom.rows = cube.rows - firstMissing;
  bottom.values.assign(cube.values.begin() + static_cast<int64_t>(top.values.size()),
                       cube.values.end());
  writeCube(top, (dir + "/top.tif").toStdString(), GDT_Int16);
  writeCube(bottom, (dir + "/bottom.tif").toStdString(), GDT_Int16);
  QString vrt =
      QString("<VRTDataset rasterXSize=\"%1\" rasterYSize=\"%2\">\n").arg(cube.cols).arg(cube.rows);
  for (int b = 1; b <= cube.bands; ++b) {
    vrt += QString("<VRTRasterBand dataType=\"Int16\" band=\"%1\">\n").arg(b);
    for (const Cube* part : {&top, &bottom})
      // SourceProperties let GDAL open the source only when its rows are read.
      vrt += QString(
                 "<SimpleSource><SourceFilename relativeToVRT=\"1\">%1</SourceFilename>"
                 "<SourceBand>%2</SourceBand>"
                 "<SourceProperties RasterXSize=\"%3\" RasterYSize=\"%4\" DataType=\"Int16\" "
                 "BlockXSize=\"%3\" BlockYSize=\"1\"/>"
                 "<SrcRect xOff=\"0\" yOff=\"0\" xSize=\"%3\" ySize=\"%4\"/>"
                 "<DstRect xOff=\"0\" yOff=\"%5\" xSize=\"%3\" ySize=\"%4\"/></SimpleSource>\n")
                 .arg(part == &top ? "top.tif" : "bottom.tif")
                 .arg(b)
                 .arg(cube.cols)
                 .arg(part->rows)
                 .arg(part == &top ? 0 : firstMissing);
    vrt += "</VRTRasterBand>\n";
  }
  vrt += "</VRTDataset>\n";
  QFile file(path);
  if (file.open(QIODevice::WriteOnly)) file.write(vrt.toUtf8());
  file.close();
  QFile::remove(dir + "/bottom.tif");
}

QString sharedDataDir() {
  // HYPERSTREAM_SHARED_DATA: a copy elsewhere (the GPU machine gets one beside the build).
  const QByteArray elsewhere = qgetenv("HYPERSTREAM_SHARED_DATA");
  const QDir dir(elsewhere.isEmpty() ? QStringLiteral(HYPERSTREAM_SOURCE_DIR "/../shared/data")
                                     : QString::fromLocal8Bit(elsewhere));
  return dir.exists() ? dir.absolutePath() : QString();
}

namespace {

// "VmRSS" or "VmHWM" of this process in bytes; -1 when unknown.
int64_t residentBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream words(line.substr(field.size() + 1));
      int64_t kib = -1;
      words >> kib;
      return kib < 0 ? -1 : kib * 1024;
    }
  return -1;
}

bool resetPeakResident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace

int64_t peakGrowth(const std::function<void()>& work) {
  if (!resetPeakResident() || residentBytes("VmHWM") < 0) return -1;
  const int64_t before = residentBytes("VmRSS");
  work();
  return residentBytes("VmHWM") - before;
}

QStringList filesIn(const QString& folder) {
  return QDir(folder).entryList(QDir::Files | QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot);
}

hyperstream::Moments referenceMoments(const std::vector<double>& values,
                                      const std::vector<unsigned char>& valid, int bands) {
  hyperstream::Moments m(bands);
  std::vector<long double> mean(bands, 0.0L);
  for (size_t p = 0; p < valid.size(); ++p) {
    if (!valid[p]) continue;
    ++m.count;
    for (int b = 0; b < bands; ++b) {
      const double v = values[p * bands + b];
      mean[b] += v;
      m.minimum[b] = std::min(m.minimum[b], v);
      m.maximum[b] = std::max(m.maximum[b], v);
    }
  }
  for (int b = 0; b < bands; ++b) mean[b] /= static_cast<long double>(m.count);
  std::vector<long double> comoment(static_cast<size_t>(bands) * bands, 0.0L);
  for (size_t p = 0; p < valid.size(); ++p)
    if (valid[p])
      for (int i = 0; i < bands; ++i)
        for (int j = 0; j < bands; ++j)
          comoment[i * bands + j] +=
              (values[p * bands + i] - mean[i]) * (values[p * bands + j] - mean[j]);
  for (int b = 0; b < bands; ++b) m.mean[b] = static_cast<double>(mean[b]);
  for (size_t k = 0; k < comoment.size(); ++k) m.comoment[k] = static_cast<double>(comoment[k]);
  return m;
}

double comomentError(const hyperstream::Moments& a, const hyperstream::Moments& reference) {
  double worst = 0;
  const int n = reference.bands;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double scale =
          std::sqrt(reference.comoment[i * n + i] * reference.comoment[j * n + j]) + 1e-300;
      worst =
          std::max(worst, std::abs(a.comoment[i * n + j] - reference.comoment[i * n + j]) / scale);
    }
  return worst;
}

// The valid pixels' values of the bands `used`, band-major (band i's pixels together).
std::vector<std::vector<long double>> bandRows(const Cube& cube, const std::vector<int>& used) {
  std::vector<std::vector<long double>> rows(used.size());
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    if (!testing::referenceValid(cube, p)) continue;
    for (size_t i = 0; i < used.size(); ++i)
      rows[i].push_back(cube.at(p / cube.cols, p % cube.cols, used[i]));
  }
  return rows;
}

long double dot(const std::vector<long double>& a, const std::vector<long double>& b) {
  long double sum = 0;
  for (size_t k = 0; k < a.size(); ++k) sum += a[k] * b[k];
  return sum;
}

// y less its projection on the span of `others` (an orthonormal basis built here by modified
// Gram-Schmidt, twice): the residual of the least-squares regression of y on the others.
std::vector<long double> regressionResidual(
    const std::vector<long double>& y, const std::vector<const std::vector<long double>*>& others) {
  std::vector<std::vector<long double>> basis;
  for (const auto* column : others) {
    std::vector<long double> q = *column;
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& e : basis) {
        const long double along = dot(q, e);
        for (size_t k = 0; k < q.size(); ++k) q[k] -= along * e[k];
      }
    const long double norm = std::sqrt(dot(q, q));
    for (long double& v : q) v /= norm;
    basis.push_back(std::move(q));
  }
  std::vector<long double> w = y;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& e : basis) {
      const long double along = dot(w, e);
      for (size_t k = 0; k < w.size(); ++k) w[k] -= along * e[k];
    }
  return w;
}

std::vector<double> referenceRegressionNoise(const Cube& cube, const std::vector<int>& used) {
  const auto rows = bandRows(cube, used);
  std::vector<double> noise;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<const std::vector<long double>*> others;
    for (size_t j = 0; j < rows.size(); ++j)
      if (j != i) others.push_back(&rows[j]);
    const std::vector<long double> w = regressionResidual(rows[i], others);
    noise.push_back(static_cast<double>(dot(w, w) / static_cast<long double>(w.size())));
  }
  return noise;
}

}  // namespace testing
