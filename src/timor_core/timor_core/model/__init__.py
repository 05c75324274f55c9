"""The model layer: modules, bodies, geometry and meshes, module sets, assemblies and their kinematic tree,
validation and parameterizable modules. Knows nothing about Pinocchio, tasks or file formats of other tools."""
