#pragma once
// The MNF fit (Green et al. 1988, Lee et al. 1990): the generalised eigenproblem S w = λ N w of
// the signal covariance S and the noise covariance N, with wᵀ N w = 1.

#include "projection/PcaModel.h"
#include "stats/Moments.h"

#include <string>
#include <vector>

namespace hyperstream {

// `signal`: the valid pixels' moments; `noise`: the moments of the differences of valid pairs
// (NoiseDifferences), whose covariance halved is N. Eigenvalues λ = 1 + SNR, descending; each
// vector's largest-magnitude loading positive. Constant bands are left out (a warning in
// `warnings`); a singular N is an Error naming the band at fault.
PcaModel fitMnf(const Moments& signal, const Moments& noise, std::vector<std::string>& warnings);

}  // namespace hyperstream
