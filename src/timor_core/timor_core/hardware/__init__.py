"""Real robots: hardware profiles (``profiles``: drives, buses, chains), CANopen (``eds``/``eds_text``: a drive's
EDS/DCF read and normalised; ``canopen_bus``, ``canopen_pdo``, ``canopen_units``: ros2_canopen's bus.yml;
``canopen_sim``: simulated CiA 402 drives), EtherCAT (``ethercat_config``), bus discovery (``discover``) and the
generated bring-up packages (``bringup``, ``bringup_routes``; their launch files are ``bringup_templates``).

May import from timor_core: errors, limits, common, model, export.formats, ros.
"""
