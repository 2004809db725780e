# tr_add_module(NAME [RECURSE]): an OBJECT library tr_<NAME> from the .c
# files of the current source folder. Instruction-set files are compiled only
# for their architecture, with the flags of their set (callers dispatch at
# run time through src/tensor/cpu.h and reference them under TR_CPU_X86 /
# TR_CPU_ARM64): _avx2.c and _avx512.c on x86-64, _neon.c (the AArch64
# baseline) and _neon_dotprod.c (SDOT/UDOT) on aarch64.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(TR_ARCH_X86 ON)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(TR_ARCH_ARM64 ON)
endif()
function(tr_add_module name)
    cmake_parse_arguments(ARG "RECURSE" "" "" ${ARGN})
    if(ARG_RECURSE)
        file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
    else()
        file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
    endif()
    foreach(src ${srcs})
        if((src MATCHES "_avx(2|512)\\.c$" AND NOT TR_ARCH_X86)
           OR (src MATCHES "_neon(_dotprod)?\\.c$" AND NOT TR_ARCH_ARM64))
            list(REMOVE_ITEM srcs ${src})
        endif()
    endforeach()
    if(NOT srcs)
        return() # module not written yet
    endif()
    add_library(tr_${name} OBJECT ${srcs})
    # Only what the public headers mark TRANSCRIBE_API leaves the shared
    # library; everything internal stays hidden (scripts/check-exports).
    set_target_properties(tr_${name} PROPERTIES C_VISIBILITY_PRESET hidden)
    target_include_directories(tr_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(tr_${name} PRIVATE TRANSCRIBE_BUILD)
    foreach(src ${srcs})
        if(src MATCHES "_avx2\\.c$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
        elseif(src MATCHES "_avx512\\.c$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
                "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx2;-mfma;-mf16c")
        elseif(src MATCHES "_neon_dotprod\\.c$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
        endif()
    endforeach()
endfunction()
