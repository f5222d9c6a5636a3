#pragma once
// JSON text for the document the Chakra reader hands to the PyTorch-ET loader, written
// directly (a DOM per node costs more than the rest of the load) and valid by construction:
// strings are escaped, invalid UTF-8 is replaced, reals keep a decimal point.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "et_def.pb.h"

namespace perfsim::trace_io {

class JsonText {
 public:
  JsonText& raw(std::string_view text) {
    out_ += text;
    return *this;
  }
  JsonText& string(std::string_view text);
  JsonText& integer(std::int64_t value);
  JsonText& unsigned_integer(std::uint64_t value);
  JsonText& real(double value);  // null for NaN and infinities, which JSON cannot hold
  JsonText& boolean(bool value) { return raw(value ? "true" : "false"); }
  // An attribute's value of any encoding: a number, true/false, a string or a list of them.
  JsonText& attribute_value(const ChakraProtoMsg::AttributeProto& attr);

  std::string& text() { return out_; }

 private:
  template <class Values, class Write>
  JsonText& list(const Values& values, Write write);

  std::string out_;
};

enum class IntegerProblem { kNone, kMissing, kNotAnInteger, kOutOfRange };

// An integer attribute in whichever encoding the writer chose (Chakra's own tools disagree:
// its generator writes comm_size as uint64_val, its converter as int64_val).
struct AttributeInteger {
  std::int64_t value = 0;
  IntegerProblem problem = IntegerProblem::kMissing;
};
AttributeInteger attribute_integer(const ChakraProtoMsg::AttributeProto* attr);

}  // namespace perfsim::trace_io
