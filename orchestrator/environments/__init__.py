"""The image cache: the images of an instance's phases 1-3 (its environment) and 4 (its base
commit), from the caches or built (:mod:`.build`), composing the phase packages (``checkout``,
``setup``, ``dependencies``, ``base_commit``), which never import each other."""
