#pragma once
// Spatial preprocessing of one strip on the CPU (the CPU backend's spatialPreprocess).

#include "core/WorkerThreads.h"
#include "spp/SppKernels.h"

#include <vector>

namespace hyperstream {

// The window's offsets (dr, dc) ≠ (0, 0), row by row and column by column; the offsets of one row
// offset are consecutive, and offset i's reverse (-dr, -dc) is at index count - 1 - i.
struct Window {
  int halo = 0;
  int count = 0;
  std::vector<double> beta;  // 1 / (dr² + dc²)
  explicit Window(int halo_) : halo(halo_), count((2 * halo_ + 1) * (2 * halo_ + 1) - 1) {
    for (int dr = -halo; dr <= halo; ++dr)
      for (int dc = -halo; dc <= halo; ++dc)
        if (dr != 0 || dc != 0) beta.push_back(1.0 / (dr * dr + dc * dc));
  }
  int index(int dr, int dc) const {
    const int cell = (dr + halo) * (2 * halo + 1) + dc + halo;
    return cell > count / 2 ? cell - 1 : cell;  // the centre cell is not an offset
  }
  int reverse(int offset) const { return count - 1 - offset; }
};

// Per pixel of a strip: unit spectra (float32: their differences stay accurate to ~1e-7, far inside
// alpha's 1e-6) and the spectral angles to its neighbours. Both are laid out so that 16 pixels of a
// row fill one vector: the units band by band in lines of a row's pixels, with room either side of
// the row for the border (mirrored pixels or unusable ones), so that the neighbours at any column
// offset are one unaligned load.
class CpuSpp {
 public:
  static constexpr int kLanes = 16;
  static constexpr int kPad = 16;  // columns either side of a line (≥ the largest halo, 7)

  // Working memory per image row: its unit spectra, validity and noise, and its angle table.
  static int64_t bytesPerRow(int64_t width, int bands, int window) {
    const int64_t line = roundUp(width);
    return int64_t{4} * ((int64_t{3} * kPad + line) * (bands + 2) + line * window * window);
  }

  // wideVectors: 16-float vectors (AVX-512), else 8-float ones; the results agree to rounding.
  CpuSpp(WorkerThreads& threads, bool wideVectors) : threads_(threads), wideVectors_(wideVectors) {}

  // Returns the sum of alpha over the strip's valid pixels, in pixel order.
  double run(const SppStrip& strip, const SppOutput& output);

 private:
  static int64_t roundUp(int64_t width) { return (width + kLanes - 1) / kLanes * kLanes; }
  void prepare(const SppStrip& strip);
  void measureAngles(const SppStrip& strip);
  template <class T>
  void displaceRows(const SppStrip& strip, const T* samples, const SppOutput& output);
  template <class T>
  void unitRows(const SppStrip& strip, const T* samples);
  void measureRow(const SppStrip& strip, int64_t row, bool forward, int64_t colFirst,
                  int64_t colLast);
  void measureGroup(const SppStrip& strip, int64_t row, int64_t neighbourRow, int dr, int dcFirst,
                    int count, int64_t col, bool forward, bool storeReverse);
  float* angles(int offset, int64_t row) {
    return &angles_[(static_cast<size_t>(offset) * rows_ + (row - row0_)) * tableLine_];
  }
  const float* unitLine(int64_t row, int band) const {
    return &unit_[(static_cast<size_t>(row - blockRow0_) * bands_ + band) * lineLength_ + kPad];
  }
  const float* validLine(int64_t row) const {
    return &valid_[static_cast<size_t>(row - blockRow0_) * lineLength_ + kPad];
  }
  const float* noiseLine(int64_t row) const {
    return &noise_[static_cast<size_t>(row - blockRow0_) * lineLength_ + kPad];
  }

  WorkerThreads& threads_;
  bool wideVectors_;
  Window window_{0};
  int bands_ = 0;
  int64_t blockRow0_ = 0, row0_ = 0, rows_ = 0;
  int64_t lineLength_ = 0;     // kPad + the width rounded up to kLanes + kPad (+ kLanes, see run)
  int64_t tableLine_ = 0;      // the width rounded up to kLanes
  std::vector<float> unit_;    // [block row][band][line]
  std::vector<float> valid_;   // [block row][line]: 1 for a usable pixel, else 0
  std::vector<float> noise_;   // [block row][line]: tr N / |y|², 0 where unusable
  std::vector<float> angles_;  // [offset][output row][table line]; < 0: no neighbour, NaN: to do
  std::vector<double> alphas_;
};

}  // namespace hyperstream
