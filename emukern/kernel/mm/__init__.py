"""Memory management: the process's mm (:mod:`mm_struct`, over the machine's AddressSpace), the
address-space layout chosen at exec (:mod:`layout`), get_unmapped_area and expand_stack
(:mod:`mmap`), the vma view the memory syscalls use (:mod:`vma`), and :mod:`uaccess`, the user
copies (copy_from_user / copy_to_user and the chunked forms) with their cost."""
