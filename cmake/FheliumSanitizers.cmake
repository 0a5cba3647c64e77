# -DFHELIUM_SANITIZE=ON builds the C and C++ code with AddressSanitizer and
# UndefinedBehaviorSanitizer (nvcc takes no -fsanitize; CUDA code is checked
# with compute-sanitizer on a GPU instead). CI uses it in a separate folder.
option(FHELIUM_SANITIZE "Build with ASan + UBSan" OFF)
if(FHELIUM_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()

# -DFHELIUM_BUILD_FUZZERS=ON (clang only: CC=clang CXX=clang++) builds the
# libFuzzer targets of tests/fuzz. Every library is then compiled with
# coverage instrumentation, ASan and UBSan, so the fuzzers see into the code
# they drive; build only the targets (fhelium_fuzzers) in such a folder.
option(FHELIUM_BUILD_FUZZERS "Build the libFuzzer targets (clang only)" OFF)
if(FHELIUM_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FHELIUM_BUILD_FUZZERS needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  # The loaders then accept any check value (core/src/serialization/checksum.hpp).
  add_compile_definitions(FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()
