// Test plugins forward to the CPU backend through the template backend.
#pragma once

#include "template_backend.hpp"

namespace fhelium::test {

class ForwardingBackend : public example::TemplateBackend {
 public:
  std::string name() const override { return "forwarding"; }
};

}  // namespace fhelium::test
