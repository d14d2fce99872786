// A second translation unit that includes the tuned header (tests/consumer/CMakeLists.txt): the
// header's definitions are inline, so the program links (no duplicate symbols), and select() here
// takes the entries main.cpp's does.
#include "contact_tuned.hpp"

int second_unit_index(int arch) {
  return tune_tuned::contact::select(tune_tuned::contact::Device{"Synthetic GPU B (fixture)", arch, 0}, {4, 64, 64, 32})
      .index;
}
