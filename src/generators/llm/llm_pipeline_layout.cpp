#include "generators/llm/llm_pipeline_layout.hpp"

#include <cstddef>

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

// Far beyond any real model: a typo such as t*100000000 stops here instead of filling memory.
constexpr long kMaxElements = 1'000'000;

struct Symbol {
  char c = 0;
  int position = 0;  // 1-based, in the string as given (commas included)
};

bool is_element(char c) {
  return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|';
}

// Expands repetitions and groups into one symbol per element, each keeping the position of
// the character it came from.
class Expander {
 public:
  Expander(std::string_view layout, const std::string& source, const std::string& field)
      : source_(source), field_(field) {
    for (std::size_t i = 0; i < layout.size(); ++i)
      if (layout[i] != ',')  // Megatron removes the cosmetic commas before anything else
        text_.push_back({layout[i], static_cast<int>(i + 1)});
  }

  std::vector<Symbol> expand() { return sequence(false); }

  [[noreturn]] void fail(int position, const std::string& problem) const {
    throw InputError(source_, field_, "character " + std::to_string(position) + ": " + problem);
  }

 private:
  bool at_end() const { return next_ >= text_.size(); }
  const Symbol& peek() const { return text_[next_]; }

  // The elements up to the end of the string, or in a group up to its ')' (left unread).
  std::vector<Symbol> sequence(bool in_group) {
    std::vector<Symbol> out;
    while (!at_end()) {
      const Symbol symbol = peek();
      if (symbol.c == ')') {
        if (!in_group)
          fail(symbol.position, "')' closes no '('");
        return out;
      }
      ++next_;
      if (symbol.c == '(') {
        if (in_group)
          fail(symbol.position,
               "'(' inside a group: Megatron-Core expands one level of parentheses");
        const std::vector<Symbol> group = sequence(true);
        if (at_end())
          fail(symbol.position, "'(' is never closed");
        const Symbol close = peek();
        ++next_;
        if (group.empty())
          fail(symbol.position, "empty group '()'");
        if (at_end() || peek().c != '*')
          fail(close.position, "a group needs a count, '(...)*N'");
        append(out, group, count(), symbol.position);
        continue;
      }
      if (symbol.c == '*')
        fail(symbol.position, "'*' repeats nothing (X*N or (...)*N)");
      if (!is_element(symbol.c))
        fail(symbol.position, std::string("'") + symbol.c +
                                  "' is not a layout element (E embedding, t transformer layer, "
                                  "m MTP layer, L loss, '|' between virtual stages; X*N and "
                                  "(...)*N repeat)");
      const long times = !at_end() && peek().c == '*' ? count() : 1;
      append(out, {symbol}, times, symbol.position);
    }
    return out;
  }

  // '*' and its count, N >= 0.
  long count() {
    const Symbol star = peek();
    ++next_;
    long value = 0;
    bool digits = false;
    while (!at_end() && peek().c >= '0' && peek().c <= '9') {
      value = value * 10 + (peek().c - '0');
      if (value > kMaxElements)
        fail(star.position, "the count is above " + std::to_string(kMaxElements));
      digits = true;
      ++next_;
    }
    if (!digits)
      fail(star.position, "'*' needs a count, X*N or (...)*N");
    if (!at_end() && peek().c == '*')
      fail(peek().position, "a count cannot be repeated again; use a group, (...)*N");
    return value;
  }

  void append(std::vector<Symbol>& out, const std::vector<Symbol>& unit, long times,
              int position) const {
    if (static_cast<long>(out.size()) + static_cast<long>(unit.size()) * times > kMaxElements)
      fail(position,
           "the layout expands to more than " + std::to_string(kMaxElements) + " elements");
    for (long i = 0; i < times; ++i)
      out.insert(out.end(), unit.begin(), unit.end());
  }

  const std::string& source_;
  const std::string& field_;
  std::vector<Symbol> text_;
  std::size_t next_ = 0;
};

}  // namespace

std::vector<LayoutStage> parse_pipeline_layout(std::string_view layout, const std::string& source,
                                               const std::string& field) {
  Expander expander(layout, source, field);
  const std::vector<Symbol> symbols = expander.expand();

  std::vector<LayoutStage> stages(1);
  stages.front().position = 1;
  // Megatron's checks on the flattened layout (the elements in order, '|' aside): it starts
  // with the one E, ends with the one L, and no t follows the first m.
  const Symbol* last = nullptr;
  const Symbol* first_mtp = nullptr;
  for (const Symbol& symbol : symbols) {
    if (symbol.c == '|') {
      stages.emplace_back();
      stages.back().position = symbol.position + 1;
      continue;
    }
    if (last == nullptr && symbol.c != 'E')
      expander.fail(symbol.position, "the layout must start with the embedding 'E'");
    if (last != nullptr && symbol.c == 'E')
      expander.fail(symbol.position, "a second embedding 'E' (the layout holds exactly one)");
    if (last != nullptr && last->c == 'L')
      expander.fail(symbol.position, "an element after the loss 'L' at character " +
                                         std::to_string(last->position) +
                                         " (the layout ends with the one L)");
    LayoutStage& stage = stages.back();
    auto note = [&symbol](int& count, int& position) {
      if (count++ == 0)
        position = symbol.position;
    };
    if (symbol.c == 'E') {
      note(stage.embedding, stage.embedding_position);
    } else if (symbol.c == 'L') {
      note(stage.loss, stage.loss_position);
    } else if (symbol.c == 'm') {
      note(stage.mtp, stage.mtp_position);
      if (first_mtp == nullptr)
        first_mtp = &symbol;
    } else {  // 't'
      if (first_mtp != nullptr)
        expander.fail(symbol.position,
                      "a transformer layer 't' after the MTP layer 'm' at character " +
                          std::to_string(first_mtp->position) +
                          " (Megatron-Core: decoder layers come before MTP layers)");
      ++stage.decoder;
    }
    last = &symbol;
  }
  if (last == nullptr)
    expander.fail(1, "the layout holds no element (it needs E ... L)");
  if (last->c != 'L')
    expander.fail(last->position, "the layout must end with the loss 'L'");
  return stages;
}

}  // namespace perfsim::generators::llm
