"""A robot's URDF read back as one CoBRA module (``timor import``, ``PinRobot.from_urdf``): ``importer`` (the
entry points ``db_from_urdf``, ``assembly_from_urdf``), ``urdf_reader`` (the elements, bounded and checked),
``urdf_tree`` (the tree's checks and the tool link's guess) and ``urdf_build`` (the module from them).

May import from timor_core: errors, limits, common, model, export.formats.
"""
