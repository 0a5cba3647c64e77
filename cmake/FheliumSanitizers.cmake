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
