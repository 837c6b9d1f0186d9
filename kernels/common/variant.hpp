// Kernel-variant interface (CUTLASS style): every kernel family has variants that say
// whether they can implement a problem and run it. A plain variant composed of ATen ops
// always exists and is the CPU reference the fused variants are validated against.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sg::kernels {

enum class Status {
  kSuccess,
  kErrorNotSupported,    // the variant cannot handle this problem (shape, dtype, device)
  kErrorInvalidProblem,  // the problem itself is malformed
  kErrorUnavailable,     // the variant is not built into this binary (e.g. no CUDA)
  kErrorConstraint,      // the tunable parameters violate a family constraint
};
const char* to_string(Status status);

// Tunable parameter values of one variant instance, e.g. {"threads": 128, "vec": 2}.
using ParamValues = std::map<std::string, int64_t>;

// What a variant is asked to do: shapes, dtype and device of the main operand.
// Operand facts a fused variant needs beyond shape/dtype/device are filled by the
// family's problem builder (kernels/<family>/<family>.hpp) from the actual tensors.
struct Problem {
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  c10::DeviceType device = c10::DeviceType::CPU;
  bool contiguous = true;        // every operand has the dense layout the family expects
  int64_t alignment_bytes = 16;  // min alignment of the operands' data pointers (power of 2)
  bool operands_match = true;  // secondary operands have the dtype/shape/device the family expects
};

// A tunable parameter of a family and the values worth searching.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> values;
};

// Constraint over a family's parameters: the text is shown in the manifest.
struct Constraint {
  std::string text;
  bool (*holds)(const ParamValues& params) = nullptr;
};

// Largest power of two (<= 256) dividing the tensor's data address.
int64_t alignment_of(const at::Tensor& t);
// The problem of a main operand alone: its shape, dtype, device, density and alignment.
Problem base_problem(const at::Tensor& main);
// Adds a further operand to p: dense and aligned only as far as every operand is.
void add_operand(Problem& p, const at::Tensor& operand);

class Variant {
 public:
  virtual ~Variant() = default;
  virtual std::string name() const = 0;
  // REQUIRES: nothing; never throws for an unsupported problem, returns a status.
  virtual Status can_implement(const Problem& problem, const ParamValues& params) const = 0;
};

// A family's variant interface: run() is its main op on the family's argument struct (a
// family with more ops adds them).
template <class Args>
class VariantOf : public Variant {
 public:
  virtual at::Tensor run(const Args& args, const ParamValues& params) const = 0;
};

// A family's plain variant (its reference, composed of ATen ops, on every device): named
// "plain_aten"; it implements every problem that well_formed() accepts (by default any with
// a shape), and reports kErrorInvalidProblem for the others.
template <class FamilyVariant>
class PlainVariant : public FamilyVariant {
 public:
  std::string name() const final { return "plain_aten"; }
  Status can_implement(const Problem& problem, const ParamValues&) const final {
    return well_formed(problem) ? Status::kSuccess : Status::kErrorInvalidProblem;
  }

 protected:
  virtual bool well_formed(const Problem& problem) const { return !problem.shape.empty(); }
};

// One static instance of a variant type: what plain_<family>() and fused_<family>() hand out.
template <class T>
const T& variant_instance() {
  static const T kInstance;
  return kInstance;
}

}  // namespace sg::kernels
