// problem.json's edits and edge cases: reading them, and writing them into drawn data.
#include "problem/problem_impl.hpp"

#include <algorithm>

#include "problem/json_check.hpp"

namespace tune {

using namespace problem_file;

void Problem::Impl::parse_edits(const std::vector<std::string>& loop_names) {
  const Json& j = json;
  if (j.contains("edits"))
    for (std::size_t i = 0; i < j.at("edits").size(); ++i) {
      if (!j.at("edits")[i].is_object()) fail(fmt::format("edits[{}] must be an object", i));
      edits.push_back(parse_edit(j.at("edits")[i], fmt::format("edits[{}]", i), loop_names, true));
    }
  if (j.contains("edge_cases"))
    for (std::size_t i = 0; i < j.at("edge_cases").size(); ++i) parse_edge_case(j.at("edge_cases")[i], i, loop_names);
}

Edit Problem::Impl::parse_edit(const Json& j, const std::string& where, const std::vector<std::string>& loop_names,
                               bool top_level) {
  auto f = [&](const std::string& m) { fail(m); };
  if (top_level)
    json_check::keys(j, {"tensor", "for", "index", "value", "when", "purpose"}, where, f);
  else
    json_check::keys(j, {"tensor", "for", "index", "value", "when"}, where, f);
  Edit e;
  e.where = where;
  const std::string target = json_check::string(j, "tensor", where, f);
  auto it = std::find_if(tensors.begin(), tensors.end(), [&](const TensorDef& t) { return t.name == target; });
  if (it == tensors.end() || it->role == Role::kOutput)
    fail(fmt::format("{}.tensor '{}' is not a parameter or input of the problem", where, target));
  e.tensor = static_cast<std::size_t>(it - tensors.begin());
  const std::string purpose = j.contains("purpose") ? json_check::string(j, "purpose", where, f) : "always";
  if (purpose != "always" && purpose != "parity")
    fail(fmt::format("{}.purpose '{}' is not always or parity", where, purpose));
  e.parity_only = purpose == "parity";
  // Loop variables have values only while their own edit's loops run: a `when` or a loop bound that
  // names one, or an index or value that names another edit's, would read a value left from before.
  std::vector<std::string> mine;
  auto no_stale_loop = [&](const space::Expression& x, const std::string& what) {
    for (const auto& v : x.variables())
      if (std::find(loop_names.begin(), loop_names.end(), v) != loop_names.end() &&
          std::find(mine.begin(), mine.end(), v) == mine.end())
        fail(fmt::format("{} '{}' names loop variable '{}', {}", what, x.text(), v,
                         mine.empty() ? "which has no value there: a when and the loop bounds are over the dims"
                                      : "which is not one of this edit's 'for'"));
  };
  if (j.contains("when")) {
    e.when = expression(j.at("when"), where + ".when");
    no_stale_loop(*e.when, where + ".when");
  }
  if (j.contains("for")) {
    if (!j.at("for").is_object()) fail(where + ".for must map loop variables to their bounds");
    for (const auto& [var, bound] : j.at("for").items()) {
      if (std::find(loop_names.begin(), loop_names.end(), var) == loop_names.end())
        fail(where + ".for: bad variable " + var);
      e.loops.emplace_back(table.slot(var), expression(bound, where + ".for." + var));
      no_stale_loop(e.loops.back().second, where + ".for." + var);
    }
    for (const auto& [var, bound] : j.at("for").items()) mine.push_back(var);
  }
  if (!j.contains("index") || !j.at("index").is_array()) fail(where + ".index must list one expression per dimension");
  for (std::size_t d = 0; d < j.at("index").size(); ++d)
    e.index.push_back(expression(j.at("index")[d], fmt::format("{}.index[{}]", where, d)));
  for (std::size_t d = 0; d < e.index.size(); ++d) no_stale_loop(e.index[d], fmt::format("{}.index[{}]", where, d));
  if (e.index.size() != it->shape.size())
    fail(fmt::format("{}.index has {} entries but tensor '{}' has {} dimensions", where, e.index.size(), target,
                     it->shape.size()));
  if (!j.contains("value")) fail(where + " needs 'value', an expression");
  e.value = expression(j.at("value"), where + ".value");
  no_stale_loop(*e.value, where + ".value");
  if (e.value->is_constant())
    for (const DType d : possible_dtypes(*it))
      if (const std::string why = beyond(d, e.value->eval(), target); !why.empty())
        fail(fmt::format("{}.value '{}' gives {}, which {}", where, e.value->text(), e.value->eval(),
                         why.starts_with("makes ") ? "would make " + why.substr(6) : why));
  return e;
}

void Problem::Impl::parse_edge_case(const Json& j, std::size_t i, const std::vector<std::string>& loop_names) {
  const std::string where = fmt::format("edge_cases[{}]", i);
  auto f = [&](const std::string& m) { fail(m); };
  json_check::keys(j, {"name", "set", "edits", "when"}, where, f);
  EdgeCase c;
  c.name = json_check::string(j, "name", where, f);
  if (c.name.empty()) fail(where + ".name is empty");
  for (const auto& other : edge_cases)
    if (other.name == c.name) fail(fmt::format("{}.name: edge case '{}' is declared twice", where, c.name));
  if (j.contains("when")) c.when = expression(j.at("when"), where + ".when", true);
  if (j.contains("set")) {
    const Json& set = j.at("set");
    if (!set.is_object()) fail(where + ".set must map tensor names to operations ({\"pair_repr\": {\"scale\": 100}})");
    for (const auto& [target, ops] : set.items()) {
      if (target == "_comment") continue;
      TensorSet s;
      s.where = where + ".set." + target;
      const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const TensorDef& t) { return t.name == target; });
      if (it == tensors.end()) fail(s.where + ": no parameter or input of the problem has that name");
      if (it->role == Role::kOutput)
        fail(s.where + ": '" + target + "' is the output; only parameters and inputs can be set");
      s.tensor = static_cast<std::size_t>(it - tensors.begin());
      json_check::keys(ops, {"fill", "scale", "offset"}, s.where, f);
      if (!ops.contains("fill") && !ops.contains("scale") && !ops.contains("offset"))
        fail(s.where + " needs an operation: fill, scale or offset (a number)");
      auto number = [&](const char* key) {
        const Json& v = ops.at(key);
        // A float32 value: the data is float32, and a larger number is infinite there.
        if (!v.is_number() || !std::isfinite(v.get<double>()) ||
            std::abs(v.get<double>()) > static_cast<double>(std::numeric_limits<float>::max()))
          fail(fmt::format("{}.{}: {} is not a finite float32 number", s.where, key, v.dump()));
        return v.get<double>();
      };
      if (ops.contains("fill")) s.fill = number("fill");
      if (ops.contains("scale")) s.scale = number("scale");
      if (ops.contains("offset")) s.offset = number("offset");
      if (s.fill && !(std::abs(*s.fill * s.scale + s.offset) <= static_cast<double>(std::numeric_limits<float>::max())))
        fail(fmt::format("{}: fill {} x scale {} + offset {} is {}, beyond float32; choose smaller numbers", s.where,
                         *s.fill, s.scale, s.offset, *s.fill * s.scale + s.offset));
      c.sets.push_back(std::move(s));
    }
  }
  if (j.contains("edits")) {
    if (!j.at("edits").is_array()) fail(where + ".edits must be a list (the syntax of the top-level edits)");
    for (std::size_t k = 0; k < j.at("edits").size(); ++k) {
      const std::string at = fmt::format("{}.edits[{}]", where, k);
      if (!j.at("edits")[k].is_object()) fail(at + " must be an object");
      c.edits.push_back(parse_edit(j.at("edits")[k], at, loop_names, false));
    }
  }
  if (c.sets.empty() && c.edits.empty())
    fail(where + " changes nothing: give 'set' ({\"<tensor>\": {\"scale\": 100}}) or 'edits'");
  edge_cases.push_back(std::move(c));
}

void Problem::Impl::for_each_write(const Edit& e, const std::vector<std::int64_t>& shape, const std::string& what,
                                   DType dtype, const std::function<void(std::int64_t, double)>& write) const {
  if (e.when && !holds(*e.when)) return;
  std::int64_t elements = 1;
  for (const auto n : shape) elements *= n;
  // Each iteration writes one element: more iterations than elements only repeat writes, and an
  // unbounded loop would hang the run (issue 34 #5).
  std::vector<std::int64_t> bounds;
  double iterations = 1;  // in double: a product of int64 bounds may overflow
  for (const auto& [slot, bound] : e.loops) {
    bounds.push_back(std::max<std::int64_t>(0, integer(bound, e.where + " loop bound")));
    iterations *= static_cast<double>(bounds.back());
  }
  if (iterations > static_cast<double>(std::max<std::int64_t>(elements, 1)))
    fail(
        fmt::format("{}.for: the loops run {:.0f} times at this shape, more than the {} elements of tensor '{}' (each "
                    "iteration writes one); bound them by the tensor's dims",
                    e.where, iterations, elements, what));
  if (iterations == 0) return;
  std::vector<std::int64_t> at(bounds.size(), 0);
  for (;;) {
    for (std::size_t l = 0; l < at.size(); ++l) table.set(e.loops[l].first, static_cast<double>(at[l]));
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < e.index.size(); ++d) {
      const std::int64_t k = integer(e.index[d], fmt::format("{}.index[{}]", e.where, d));
      if (k < 0 || k >= shape[d])
        fail(fmt::format("{}.index[{}] '{}' gives {}, outside tensor '{}' (size {}) at this shape", e.where, d,
                         e.index[d].text(), k, what, shape[d]));
      flat = flat * shape[d] + k;
    }
    const double v = e.value->eval();
    if (const std::string why = beyond(dtype, v, what); !why.empty())
      fail(fmt::format("{}.value '{}' gives {} at element {}, which {}", e.where, e.value->text(), v, flat, why));
    write(flat, v);
    std::size_t l = at.size();
    while (l > 0) {
      --l;
      if (++at[l] < bounds[l]) break;
      at[l] = 0;
      if (l == 0) return;
    }
    if (at.empty()) return;
  }
}

void Problem::Impl::apply(const Edit& e, HostTensor& t) const {
  for_each_write(e, t.spec.shape, t.spec.name, t.spec.dtype,
                 [&](std::int64_t flat, double v) { t.data[static_cast<std::size_t>(flat)] = round_to(t.spec.dtype, v); });
}

void Problem::Impl::apply(const TensorSet& s, HostTensor& t) const {
  for (std::size_t k = 0; k < t.data.size(); ++k) {
    const double v = (s.fill ? *s.fill : t.data[k]) * s.scale + s.offset;
    if (const std::string why = beyond(t.spec.dtype, v, t.spec.name); !why.empty())
      fail(fmt::format("{}: element {} ({}) becomes {}, which {}", s.where, k, t.data[k], v, why));
    t.data[k] = round_to(t.spec.dtype, v);
  }
}

std::vector<std::string> Problem::edge_cases(const Shape& shape) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  std::vector<std::string> out;
  for (const EdgeCase& c : p.edge_cases)
    if (!c.when || Impl::holds(*c.when)) out.push_back(c.name);
  return out;
}

ProblemData Problem::make_edge_case(const Shape& shape, std::uint64_t seed, const std::string& name) const {
  return make_edge_case(shape, make_data(shape, seed, DataPurpose::kParity), name);
}

ProblemData Problem::make_edge_case(const Shape& shape, const ProblemData& parity, const std::string& name) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const auto c = std::find_if(p.edge_cases.begin(), p.edge_cases.end(), [&](const EdgeCase& e) { return e.name == name; });
  if (c == p.edge_cases.end()) {
    std::vector<std::string> names;
    for (const EdgeCase& e : p.edge_cases) names.push_back("'" + e.name + "'");
    throw InputError(fmt::format("problem {} has no edge case '{}' ({})", p.name, name,
                                 names.empty() ? "it declares none" : fmt::format("it has {}", fmt::join(names, ", "))));
  }
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  if (c->when && !Impl::holds(*c->when))
    throw InputError(fmt::format("problem {}: edge case '{}' does not apply at shape {} (when '{}')", p.name, name,
                                 shape.describe(), c->when->text()));
  // The parity data back in the file's tensor order, where the sets and edits index it.
  std::vector<HostTensor> drawn(p.tensors.size());
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    if (p.tensors[i].role == Role::kOutput) continue;
    const HostTensor* t = parity.find(p.tensors[i].name);
    if (!t) throw InputError(fmt::format("problem {}: the data has no tensor '{}'", p.name, p.tensors[i].name));
    drawn[i] = *t;
  }
  for (const TensorSet& s : c->sets) p.apply(s, drawn[s.tensor]);
  for (const Edit& e : c->edits) p.apply(e, drawn[e.tensor]);
  return p.pack(std::move(drawn));
}

}  // namespace tune
