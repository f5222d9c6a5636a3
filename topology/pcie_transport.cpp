#include "topology/pcie_transport.hpp"

#include <nlohmann/json.hpp>

#include "perfsim/error.hpp"

namespace perfsim::topology {

PcieTransport parse_pcie_transport(const nlohmann::json& object, const std::string& source,
                                   const std::string& pointer) {
  if (!object.is_object())
    throw InputError(source, pointer, "expected an object, got " + std::string(object.type_name()));
  PcieTransport transport;
  transport.json_pointer = pointer;
  for (const auto& [key, value] : object.items()) {
    const std::string at = pointer + "/" + key;
    if (key == "p2p_supported") {
      if (!value.is_boolean())
        throw InputError(source, at, "expected true or false");
      transport.p2p_supported = value.get<bool>();
    } else if (key == "shm_duplex_efficiency") {
      if (!value.is_number())
        throw InputError(source, at, "expected a number");
      const double efficiency = value.get<double>();
      if (!(efficiency > 0.0 && efficiency <= 1.0))
        throw InputError(source, at, "must be in (0, 1], got " + value.dump());
      transport.shm_duplex_efficiency = efficiency;
    } else if (key == "shm_hop_extra_latency_us") {
      if (!value.is_number())
        throw InputError(source, at, "expected a number");
      const double latency_us = value.get<double>();
      if (!(latency_us >= 0.0 && latency_us <= 1000.0))
        throw InputError(source, at, "must be in [0, 1000] us, got " + value.dump());
      transport.shm_hop_extra_latency_us = latency_us;
    } else if (key == "curves_topology") {
      if (!value.is_string() || value.get<std::string>().empty())
        throw InputError(source, at, "expected a topology file name");
      transport.curves_topology = value.get<std::string>();
    } else {
      throw InputError(source, at, "unknown field '" + key + "'");
    }
  }
  return transport;
}

}  // namespace perfsim::topology
