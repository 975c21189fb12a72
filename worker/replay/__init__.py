"""`worker replay`: a recorded run again, its model replies served as recorded, its tools real."""
